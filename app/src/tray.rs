//! The tray icon: the pending count (icon variant, and the tooltip, which
//! says how many of them are parked) and a menu of pending items (a parked
//! one says so), "Open inbox", "Do not disturb" and "Quit"; while the store
//! refuses writes, a warning line heads the menu and ends the tooltip. With
//! no tray host, building it succeeds and nothing shows: the app never
//! depends on it.
//!
//! # Who can click it
//! The menu is not the operator's alone. On Linux it is exported on the
//! session bus (libayatana-appindicator's dbusmenu, served inside this
//! process), and any client of the bus can call its `Event` method on any
//! entry, as a tray host does for a click; nothing here can tell who did
//! (libdbusmenu does not say, and the names a tray host goes by are names
//! any client may take). Elsewhere other programs of the user can drive a
//! menu too (window messages, accessibility). So no entry decides anything
//! for an agent:
//! - a pending entry opens the modal on it, "Open inbox" the inbox;
//! - Quit, which cancels every pending item, quits at once only while
//!   nothing is pending; else the inbox asks, and only the window's answer
//!   quits ([`Shell::ask_to_quit`]);
//! - "Do not disturb" and "Start at login" act at once: silence only fails
//!   closed (a question nobody sees times out unanswered), and the entry
//!   starts hark itself, at a path no caller chooses.

use std::sync::atomic::{AtomicBool, Ordering};

use hark_core::model::attribution::Attribution;
use hark_core::model::ids::ItemId;
use hark_core::text::clip;
use tray_icon::menu::{CheckMenuItem, IsMenuItem, Menu, MenuId, MenuItem, PredefinedMenuItem};
use tray_icon::{Icon, TrayIcon, TrayIconBuilder};

use crate::App;
use crate::shell::Shell;
use crate::windows::{self, View};

const TRAY_ID: &str = "hark";
const IDLE_ICON: &[u8] = include_bytes!("../../icons/tray.png");
const PENDING_ICON: &[u8] = include_bytes!("../../icons/tray-pending.png");
/// Items listed in the menu; the rest are in the inbox.
const MENU_ITEMS: usize = 10;
/// The longest question text a tray entry shows.
const MENU_LABEL_CHARS: usize = 80;

/// A tray menu entry, by meaning rather than by string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayItem {
    Pending(ItemId),
    OpenInbox,
    DoNotDisturb,
    StartAtLogin,
    Quit,
}

impl TrayItem {
    fn id(self) -> MenuId {
        match self {
            TrayItem::Pending(id) => MenuId::new(format!("pending:{id}")),
            TrayItem::OpenInbox => MenuId::new("open-inbox"),
            TrayItem::DoNotDisturb => MenuId::new("dnd"),
            TrayItem::StartAtLogin => MenuId::new("autostart"),
            TrayItem::Quit => MenuId::new("quit"),
        }
    }
}

impl TryFrom<&MenuId> for TrayItem {
    type Error = ();

    fn try_from(id: &MenuId) -> Result<Self, ()> {
        match id.as_ref() {
            "open-inbox" => Ok(TrayItem::OpenInbox),
            "dnd" => Ok(TrayItem::DoNotDisturb),
            "autostart" => Ok(TrayItem::StartAtLogin),
            "quit" => Ok(TrayItem::Quit),
            other => other
                .strip_prefix("pending:")
                .and_then(|id| id.parse().ok())
                .map(|id| TrayItem::Pending(ItemId(id)))
                .ok_or(()),
        }
    }
}

/// The warning the tray shows while the store refuses writes.
fn store_warning(shell: &Shell) -> Option<String> {
    let health = shell.registry.store_health()?;
    let error = health.error?;
    Some(format!(
        "⚠ The store cannot be written ({}): {} held in memory only",
        clip(&error, MENU_LABEL_CHARS),
        health.unrecorded
    ))
}

fn menu(shell: &Shell, warning: Option<&str>) -> Result<(Menu, Vec<String>), TrayError> {
    let pending = shell.registry.pending();
    let mut entries: Vec<Box<dyn IsMenuItem>> = Vec::new();
    let mut labels = Vec::new();
    if let Some(warning) = warning {
        // It opens the inbox, whose banner says what to do.
        entries.push(Box::new(MenuItem::with_id(
            TrayItem::OpenInbox.id(),
            warning,
            true,
            None,
        )));
        entries.push(Box::new(PredefinedMenuItem::separator()));
    }
    for item in pending.iter().take(MENU_ITEMS) {
        let q = &item.request.questions[0];
        // One line per entry: a long question ends with what it asks.
        let asks = q
            .question
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or_default();
        let mut label = format!("[{}] {}", q.header, clip(asks, MENU_LABEL_CHARS));
        let who = Attribution::of(&item.asker, &item.session_id, item.run_id.as_ref());
        label.push_str(&format!(
            " — {}",
            who.sub_agent.as_deref().unwrap_or(&who.agent)
        ));
        if let Some(project) = &who.project {
            label.push_str(&format!(" in {project}"));
        }
        if item.parked_at().is_some() {
            label.push_str(" (parked)");
        }
        entries.push(Box::new(MenuItem::with_id(
            TrayItem::Pending(item.id).id(),
            &label,
            true,
            None,
        )));
        labels.push(label);
    }
    if pending.is_empty() {
        entries.push(Box::new(MenuItem::with_id(
            "nothing",
            "Nothing is waiting",
            false,
            None,
        )));
    }
    entries.push(Box::new(PredefinedMenuItem::separator()));
    entries.push(Box::new(MenuItem::with_id(
        TrayItem::OpenInbox.id(),
        "Open inbox",
        true,
        None,
    )));
    entries.push(Box::new(CheckMenuItem::with_id(
        TrayItem::StartAtLogin.id(),
        "Start at login",
        true,
        hark_core::autostart::is_enabled(),
        None,
    )));
    entries.push(Box::new(CheckMenuItem::with_id(
        TrayItem::DoNotDisturb.id(),
        "Do not disturb",
        true,
        shell.do_not_disturb(),
        None,
    )));
    entries.push(Box::new(MenuItem::with_id(
        TrayItem::Quit.id(),
        "Quit",
        true,
        None,
    )));
    let refs: Vec<&dyn IsMenuItem> = entries.iter().map(|e| e.as_ref()).collect();
    Ok((Menu::with_items(&refs)?, labels))
}

/// A menu entry was clicked (on the main thread).
pub fn on_menu(app: &App, id: &MenuId) {
    let shell = &app.shell;
    match TrayItem::try_from(id) {
        Ok(TrayItem::Pending(item)) => shell.open_item(app, item),
        Ok(TrayItem::OpenInbox) => windows::show(app, View::Inbox),
        Ok(TrayItem::DoNotDisturb) => {
            shell.set_do_not_disturb(!shell.do_not_disturb());
            app.ui(crate::UiEvent::RefreshTray);
        }
        Ok(TrayItem::StartAtLogin) => {
            let changed = if hark_core::autostart::is_enabled() {
                hark_core::autostart::disable().map(|(path, _)| (path, false))
            } else {
                hark_core::autostart::enable(&shell.dispatcher.hark).map(|path| (path, true))
            };
            match changed {
                Ok((path, on)) => tracing::info!(path = %path.display(), on, "autostart changed"),
                Err(e) => tracing::error!("cannot change the autostart entry: {e}"),
            }
            app.ui(crate::UiEvent::RefreshTray);
        }
        // A click that may not be the operator's cancels nothing.
        Ok(TrayItem::Quit) if shell.registry.pending().is_empty() => shell.quit(app),
        Ok(TrayItem::Quit) => shell.ask_to_quit(app),
        Err(()) => {}
    }
}

/// Why the tray could not be built or brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum TrayError {
    #[error(transparent)]
    Menu(#[from] tray_icon::menu::Error),
    #[error(transparent)]
    Tray(#[from] tray_icon::Error),
    #[error(transparent)]
    Icon(#[from] tray_icon::BadIcon),
    #[error("the icon is not a PNG: {0}")]
    Png(#[from] png::DecodingError),
    #[error("the tray's icon directory: {0}")]
    Dir(#[from] hark_core::files::PrivateDirError),
}

/// The tray icon, on the main thread, and whether it shows the pending
/// icon (so it is set only on a change: each set writes a new image file
/// for the tray host to load).
pub struct Tray {
    icon: TrayIcon,
    pending: AtomicBool,
}

impl std::fmt::Debug for Tray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tray")
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

/// An icon from its PNG (32×32 RGBA, built in).
fn icon(png_bytes: &[u8]) -> Result<Icon, TrayError> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::ALPHA);
    let mut reader = decoder.read_info()?;
    let mut rgba = vec![0; reader.output_buffer_size().unwrap_or_default()];
    let frame = reader.next_frame(&mut rgba)?;
    rgba.truncate(frame.buffer_size());
    Ok(Icon::from_rgba(rgba, frame.width, frame.height)?)
}

impl Tray {
    /// Creates the tray icon; with none (logged) the app goes on: it never
    /// depends on it.
    pub fn create(app: &App) -> Option<Tray> {
        match Tray::build(app) {
            Ok(tray) => Some(tray),
            Err(e) => {
                tracing::warn!("no tray icon: {e}");
                None
            }
        }
    }

    fn build(app: &App) -> Result<Tray, TrayError> {
        let (menu, _) = menu(&app.shell, None)?;
        // On Linux the icon goes to the tray host as an image file. It is kept
        // in a private directory beside the app socket: by default it would go
        // to a directory in /tmp that every user and every instance shares.
        let icons = app.shell.dispatcher.socket.with_file_name("tray-icons");
        hark_core::files::ensure_private_dir(&icons)?;
        let icon = TrayIconBuilder::new()
            .with_id(TRAY_ID)
            .with_temp_dir_path(&icons)
            .with_icon(icon(IDLE_ICON)?)
            .with_tooltip("hark — nothing is waiting")
            .with_menu(Box::new(menu))
            .build()?;
        Ok(Tray {
            icon,
            pending: AtomicBool::new(false),
        })
    }
}

/// The tooltip: how many wait, how many of them are parked (their agents
/// paused until answered), and whether the store refuses writes.
fn tooltip(count: usize, parked: usize, store_failing: bool) -> String {
    let mut tip = match count {
        0 => "hark — nothing is waiting".to_owned(),
        1 => "hark — 1 question waiting".to_owned(),
        n => format!("hark — {n} questions waiting"),
    };
    if parked > 0 {
        tip.push_str(&format!(" ({parked} parked)"));
    }
    if store_failing {
        tip.push_str(" — the store cannot be written");
    }
    tip
}

/// Brings icon, tooltip and menu up to date with the pending items (on
/// the main thread). Logs the menu it built (`tray.updated`), which is how
/// tests read the tray.
pub fn refresh(app: &App, tray: Option<&Tray>) {
    let Some(tray) = tray else {
        return;
    };
    let shell = &app.shell;
    let pending = shell.registry.pending();
    let count = pending.len();
    let parked = pending.iter().filter(|i| i.parked_at().is_some()).count();
    let warning = store_warning(shell);
    let result = (|| -> Result<(Vec<String>, String), TrayError> {
        let (menu, labels) = menu(shell, warning.as_deref())?;
        tray.icon.set_menu(Some(Box::new(menu)));
        let pending = count > 0;
        if tray.pending.swap(pending, Ordering::Relaxed) != pending {
            let png = if pending { PENDING_ICON } else { IDLE_ICON };
            tray.icon.set_icon(Some(icon(png)?))?;
        }
        let tip = tooltip(count, parked, warning.is_some());
        tray.icon.set_tooltip(Some(&tip))?;
        Ok((labels, tip))
    })();
    match result {
        Ok((labels, tip)) => {
            tracing::info!(pending = count, parked, tooltip = %tip, items = ?labels, dnd = shell.do_not_disturb(), store = ?warning, "tray.updated")
        }
        Err(e) => tracing::warn!("cannot update the tray: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::tooltip;

    #[test]
    fn the_tooltip_counts_the_parked_among_the_waiting() {
        assert_eq!(tooltip(0, 0, false), "hark — nothing is waiting");
        assert_eq!(tooltip(1, 0, false), "hark — 1 question waiting");
        assert_eq!(
            tooltip(2, 1, false),
            "hark — 2 questions waiting (1 parked)"
        );
        assert_eq!(
            tooltip(1, 1, true),
            "hark — 1 question waiting (1 parked) — the store cannot be written"
        );
    }
}
