//! macOS: UNUserNotificationCenter (through objc2's bindings, which need no
//! C compiler). The body's click and the buttons come back through a
//! delegate; a settled item's notification is taken back. Limits: macOS
//! gives notifications only to an app bundle (hark-app started from a bare
//! binary gets none, and says so; the center is not touched, as it throws
//! there), and asks the user once for permission, which an unsigned bundle
//! may be refused. Compiled in CI; never run.
//!
//! Declaring the delegate's class is `unsafe` in objc2, hence the allow.
#![allow(unsafe_code)]

use std::sync::Mutex;

use block2::RcBlock;
use objc2::rc::Retained;
use objc2::runtime::{Bool, NSObject, NSObjectProtocol, ProtocolObject};
use objc2::{AllocAnyThread, DefinedClass, define_class, msg_send};
use objc2_foundation::{NSArray, NSBundle, NSError, NSSet, NSString};
use objc2_user_notifications::{
    UNAuthorizationOptions, UNMutableNotificationContent, UNNotification, UNNotificationAction,
    UNNotificationActionOptions, UNNotificationCategory, UNNotificationCategoryOptions,
    UNNotificationPresentationOptions, UNNotificationRequest, UNNotificationResponse,
    UNUserNotificationCenter, UNUserNotificationCenterDelegate,
};
use tokio::sync::mpsc;

use super::{Backend, BoxFuture, Counted, Event, Note, NotifyError, OPEN};

/// What the system sends for a click on the notification's body.
const DEFAULT_ACTION: &str = "com.apple.UNNotificationDefaultActionIdentifier";
/// What it sends when the notification is dismissed.
const DISMISS_ACTION: &str = "com.apple.UNNotificationDismissActionIdentifier";

/// The delegate's state: where the events go.
struct Ivars {
    sender: mpsc::UnboundedSender<Event>,
}

define_class!(
    // SAFETY: NSObject has no subclassing requirements; Drop is not
    // implemented.
    #[unsafe(super(NSObject))]
    #[name = "HarkNotificationDelegate"]
    #[ivars = Ivars]
    struct Delegate;

    unsafe impl NSObjectProtocol for Delegate {}

    unsafe impl UNUserNotificationCenterDelegate for Delegate {
        #[unsafe(method(userNotificationCenter:didReceiveNotificationResponse:withCompletionHandler:))]
        fn did_receive(
            &self,
            _center: &UNUserNotificationCenter,
            response: &UNNotificationResponse,
            completion: &block2::DynBlock<dyn Fn()>,
        ) {
            let id = response
                .notification()
                .request()
                .identifier()
                .to_string()
                .parse::<u32>();
            if let Ok(id) = id {
                let action = response.actionIdentifier().to_string();
                let event = match action.as_str() {
                    DISMISS_ACTION => Event::Closed { id },
                    DEFAULT_ACTION => Event::Action {
                        id,
                        key: OPEN.to_owned(),
                    },
                    _ => Event::Action { id, key: action },
                };
                let _ = self.ivars().sender.send(event);
            }
            completion.call(());
        }

        /// Shown while the app is in front, too.
        #[unsafe(method(userNotificationCenter:willPresentNotification:withCompletionHandler:))]
        fn will_present(
            &self,
            _center: &UNUserNotificationCenter,
            _notification: &UNNotification,
            completion: &block2::DynBlock<dyn Fn(UNNotificationPresentationOptions)>,
        ) {
            completion.call((UNNotificationPresentationOptions::Banner
                | UNNotificationPresentationOptions::List
                | UNNotificationPresentationOptions::Sound,));
        }
    }
);

impl Delegate {
    fn new(sender: mpsc::UnboundedSender<Event>) -> Retained<Delegate> {
        let this = Delegate::alloc().set_ivars(Ivars { sender });
        // SAFETY: NSObject's init, on a freshly allocated object.
        unsafe { msg_send![super(this), init] }
    }
}

/// The delegate, kept alive here (the center holds it weakly).
struct Kept {
    _alive: Retained<Delegate>,
}

// SAFETY: the delegate holds only a channel sender, which is Send and Sync,
// and Objective-C's retain and release are thread-safe.
unsafe impl Send for Kept {}
// SAFETY: as above; nothing of it is mutated after it is made.
unsafe impl Sync for Kept {}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Delegate")
    }
}

/// A notification's buttons: key and label.
type Buttons = Vec<(String, String)>;

/// The notifications' ids (counted here, as the requests' identifiers),
/// the categories their buttons need, and the delegate.
#[derive(Debug, Default)]
pub struct UserNotifications {
    /// Each shown notification's category: its buttons.
    categories: Mutex<Vec<(u32, Buttons)>>,
    delegate: Mutex<Option<Kept>>,
    counted: Counted,
}

/// The center, where macOS gives this process one (an app bundle).
fn center() -> Result<Retained<UNUserNotificationCenter>, NotifyError> {
    if NSBundle::mainBundle().bundleIdentifier().is_none() {
        return Err(NotifyError::NoAppBundle);
    }
    Ok(UNUserNotificationCenter::currentNotificationCenter())
}

fn category_name(id: u32) -> String {
    format!("hark-{id}")
}

impl UserNotifications {
    /// Sets the delegate and asks for permission, once.
    fn start(&self, center: &UNUserNotificationCenter) {
        let mut delegate = self.delegate.lock().unwrap_or_else(|e| e.into_inner());
        if delegate.is_some() {
            return;
        }
        let kept = Delegate::new(self.counted.sender.clone());
        center.setDelegate(Some(ProtocolObject::from_ref(&*kept)));
        let asked = RcBlock::new(|granted: Bool, _error: *mut NSError| {
            if !granted.as_bool() {
                tracing::warn!("macOS refused hark notifications; the modal and tray still work");
            }
        });
        center.requestAuthorizationWithOptions_completionHandler(
            UNAuthorizationOptions::Alert | UNAuthorizationOptions::Sound,
            &asked,
        );
        *delegate = Some(Kept { _alive: kept });
    }

    /// Registers every shown notification's buttons as its category.
    fn register(&self, center: &UNUserNotificationCenter) {
        let categories = self.categories.lock().unwrap_or_else(|e| e.into_inner());
        let all: Vec<Retained<UNNotificationCategory>> = categories
            .iter()
            .map(|(id, buttons)| {
                let actions: Vec<Retained<UNNotificationAction>> = buttons
                    .iter()
                    .map(|(key, label)| {
                        UNNotificationAction::actionWithIdentifier_title_options(
                            &NSString::from_str(key),
                            &NSString::from_str(label),
                            UNNotificationActionOptions::Foreground,
                        )
                    })
                    .collect();
                UNNotificationCategory::categoryWithIdentifier_actions_intentIdentifiers_options(
                    &NSString::from_str(&category_name(*id)),
                    &NSArray::from_retained_slice(&actions),
                    &NSArray::new(),
                    UNNotificationCategoryOptions::CustomDismissAction,
                )
            })
            .collect();
        center.setNotificationCategories(&NSSet::from_retained_slice(&all));
    }
}

impl Backend for UserNotifications {
    fn show<'a>(
        &'a self,
        note: &'a Note,
        _replaces: u32,
    ) -> BoxFuture<'a, Result<u32, NotifyError>> {
        let shown = center().map(|center| {
            self.start(&center);
            let id = self.counted.next_id();
            let buttons: Buttons = note
                .actions
                .iter()
                .filter(|(key, _)| key != OPEN)
                .cloned()
                .collect();
            self.categories
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((id, buttons));
            self.register(&center);
            let content = UNMutableNotificationContent::new();
            content.setTitle(&NSString::from_str(&note.title));
            content.setBody(&NSString::from_str(&note.body));
            content.setCategoryIdentifier(&NSString::from_str(&category_name(id)));
            let request = UNNotificationRequest::requestWithIdentifier_content_trigger(
                &NSString::from_str(&id.to_string()),
                &content,
                None,
            );
            let added = RcBlock::new(move |error: *mut NSError| {
                if !error.is_null() {
                    tracing::warn!(notification_id = id, "macOS did not show the notification");
                }
            });
            center.addNotificationRequest_withCompletionHandler(&request, Some(&added));
            id
        });
        Box::pin(async move { shown })
    }

    fn close(&self, id: u32) -> BoxFuture<'_, Result<(), NotifyError>> {
        let closed = center().map(|center| {
            let ids = NSArray::from_retained_slice(&[NSString::from_str(&id.to_string())]);
            center.removeDeliveredNotificationsWithIdentifiers(&ids);
            self.categories
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|(shown, _)| *shown != id);
        });
        Box::pin(async move { closed })
    }

    fn events(&self) -> BoxFuture<'_, Result<mpsc::UnboundedReceiver<Event>, NotifyError>> {
        let events = center().and_then(|_| self.counted.take_events());
        Box::pin(async move { events })
    }
}
