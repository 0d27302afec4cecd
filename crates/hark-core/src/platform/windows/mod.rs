//! Named pipes and the process calls of Windows (see the module above for
//! what is checked). Run under Wine in the Windows tier (`tests/wine`); not
//! on Windows itself.
//!
//! With the app's macOS notifications, the only `unsafe` code of the
//! workspace: Win32 calls, each with what it relies on.
#![allow(unsafe_code)]

use std::io;
use std::os::windows::io::AsRawHandle;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::windows::named_pipe::{
    ClientOptions, NamedPipeClient, NamedPipeServer, PipeMode, ServerOptions,
};
use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_PIPE_BUSY, FILETIME, HANDLE, INVALID_HANDLE_VALUE, LocalFree,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{
    GetTokenInformation, PSECURITY_DESCRIPTOR, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER,
    TokenUser,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, PROCESSENTRY32W, Process32FirstW, Process32NextW, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Pipes::{
    GetNamedPipeClientProcessId, GetNamedPipeServerProcessId, WaitNamedPipeW,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetExitCodeProcess, GetProcessTimes, OpenProcess, OpenProcessToken,
    PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_TERMINATE, TerminateProcess,
};

mod job;
pub use job::*;

/// A connected pipe: the end a client opened, or one a server accepted.
#[derive(Debug)]
pub enum Stream {
    Client(NamedPipeClient),
    Server(NamedPipeServer),
}

/// A connection's reading half.
pub type ReadHalf = tokio::io::ReadHalf<Stream>;
/// A connection's writing half.
pub type WriteHalf = tokio::io::WriteHalf<Stream>;
/// Who a process runs as: its user SID (`S-1-5-21-…`).
pub type User = String;

/// Where connections are accepted: the pipe's name and the instance the
/// next client connects to.
#[derive(Debug)]
pub struct Listener {
    name: String,
    next: tokio::sync::Mutex<NamedPipeServer>,
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Client(pipe) => Pin::new(pipe).poll_read(cx, buf),
            Stream::Server(pipe) => Pin::new(pipe).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Client(pipe) => Pin::new(pipe).poll_write(cx, buf),
            Stream::Server(pipe) => Pin::new(pipe).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Client(pipe) => Pin::new(pipe).poll_flush(cx),
            Stream::Server(pipe) => Pin::new(pipe).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Client(pipe) => Pin::new(pipe).poll_shutdown(cx),
            Stream::Server(pipe) => Pin::new(pipe).poll_shutdown(cx),
        }
    }
}

impl Stream {
    fn handle(&self) -> HANDLE {
        match self {
            Stream::Client(pipe) => pipe.as_raw_handle() as HANDLE,
            Stream::Server(pipe) => pipe.as_raw_handle() as HANDLE,
        }
    }
}

/// The pipe name standing for a socket path: the same path, the same name.
pub fn pipe_name(path: &Path) -> String {
    // FNV-1a over the path's UTF-16: stable across runs and builds.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for unit in path.as_os_str().to_string_lossy().encode_utf16() {
        for byte in unit.to_le_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!(r"\\.\pipe\hark-{hash:016x}")
}

/// This process's user.
pub fn own_user() -> User {
    // SAFETY: the pseudo-handle of this process needs no closing.
    unsafe { process_user(GetCurrentProcess()) }.unwrap_or_default()
}

/// A user as a message names it.
pub fn describe_user(user: &User) -> String {
    format!("user {user}")
}

pub fn split(stream: Stream) -> (ReadHalf, WriteHalf) {
    tokio::io::split(stream)
}

/// How long a client waits for a free instance of a busy pipe.
const BUSY_WAIT_MS: u32 = 5_000;

pub async fn connect(path: &Path) -> io::Result<Stream> {
    let name = pipe_name(path);
    loop {
        match ClientOptions::new().pipe_mode(PipeMode::Byte).open(&name) {
            Ok(client) => return Ok(Stream::Client(client)),
            // Every instance is taken for the moment: the server makes the
            // next one as it accepts. The system says when one is free.
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY as i32) => {
                let wide = wide(&name);
                // SAFETY: a NUL-terminated name; the call only waits.
                let free = tokio::task::spawn_blocking(move || unsafe {
                    WaitNamedPipeW(wide.as_ptr(), BUSY_WAIT_MS)
                })
                .await
                .map_err(io::Error::other)?;
                if free == 0 {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Creates the pipe for `path` as its name's first instance, owner-only.
pub fn listen(path: &Path) -> io::Result<Listener> {
    let name = pipe_name(path);
    let first = instance(&name, true)?;
    Ok(Listener {
        name,
        next: tokio::sync::Mutex::new(first),
    })
}

/// One instance of the pipe `name`, with a DACL granting this user alone.
fn instance(name: &str, first: bool) -> io::Result<NamedPipeServer> {
    let sddl: Vec<u16> = format!("D:P(A;;GA;;;{})", own_user())
        .encode_utf16()
        .chain([0])
        .collect();
    let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `sddl` is NUL-terminated; the descriptor is freed below.
    let made = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut descriptor,
            std::ptr::null_mut(),
        )
    };
    if made == 0 {
        return Err(io::Error::last_os_error());
    }
    let mut attributes = SECURITY_ATTRIBUTES {
        nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: descriptor,
        bInheritHandle: 0,
    };
    let mut options = ServerOptions::new();
    options
        .first_pipe_instance(first)
        .reject_remote_clients(true)
        .pipe_mode(PipeMode::Byte);
    // SAFETY: `attributes` and its descriptor outlive the call.
    let server =
        unsafe { options.create_with_security_attributes_raw(name, (&raw mut attributes).cast()) };
    // SAFETY: made by ConvertStringSecurityDescriptorToSecurityDescriptorW.
    unsafe { LocalFree(descriptor) };
    server
}

pub async fn accept(listener: &Listener) -> io::Result<Stream> {
    let mut next = listener.next.lock().await;
    next.connect().await?;
    let following = instance(&listener.name, false)?;
    let connected = std::mem::replace(&mut *next, following);
    Ok(Stream::Server(connected))
}

/// Root is a Unix notion; an administrator is not treated apart.
pub fn is_root() -> bool {
    false
}

/// Windows has one pid space.
pub fn in_our_pid_namespace(_pid: i32) -> bool {
    true
}

/// The other end's process.
pub fn peer_pid(stream: &Stream) -> Option<i32> {
    let mut pid = 0u32;
    // SAFETY: a live pipe handle and a place for the pid.
    let ok = unsafe {
        match stream {
            Stream::Server(_) => GetNamedPipeClientProcessId(stream.handle(), &mut pid),
            Stream::Client(_) => GetNamedPipeServerProcessId(stream.handle(), &mut pid),
        }
    };
    (ok != 0).then_some(pid).and_then(|p| i32::try_from(p).ok())
}

/// The user the other end runs as.
pub fn peer_user(stream: &Stream) -> io::Result<User> {
    let pid = peer_pid(stream).ok_or_else(io::Error::last_os_error)?;
    let process = Process::open(pid as u32, PROCESS_QUERY_LIMITED_INFORMATION)?;
    // SAFETY: an open process handle.
    unsafe { process_user(process.0) }
}

/// The user SID of `process`, as text.
///
/// # Safety
/// `process` is an open process handle (or the current-process pseudo-handle).
unsafe fn process_user(process: HANDLE) -> io::Result<User> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: per this function's contract.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let token = Process(token);
    let mut buf = vec![0u8; 256];
    let mut len = 0u32;
    // SAFETY: `buf` holds `len` bytes for the TOKEN_USER and its SID.
    let ok = unsafe {
        GetTokenInformation(
            token.0,
            TokenUser,
            buf.as_mut_ptr().cast(),
            buf.len() as u32,
            &mut len,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: GetTokenInformation wrote a TOKEN_USER at the start of `buf`.
    let user = unsafe { std::ptr::read_unaligned(buf.as_ptr().cast::<TOKEN_USER>()) };
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: the SID lives in `buf`; the string is freed below.
    if unsafe { ConvertSidToStringSidW(user.User.Sid, &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a NUL-terminated string ConvertSidToStringSidW allocated.
    let sid = unsafe {
        let len = (0..).take_while(|&i| *text.add(i) != 0).count();
        let sid = String::from_utf16_lossy(std::slice::from_raw_parts(text, len));
        LocalFree(text.cast());
        sid
    };
    Ok(sid)
}

/// An open handle, closed when dropped.
struct Process(HANDLE);

impl Process {
    fn open(pid: u32, access: u32) -> io::Result<Process> {
        // SAFETY: OpenProcess takes any pid; a null handle is its error.
        let handle = unsafe { OpenProcess(access, 0, pid) };
        if handle.is_null() {
            Err(io::Error::last_os_error())
        } else {
            Ok(Process(handle))
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // SAFETY: a handle this value owns.
        unsafe { CloseHandle(self.0) };
    }
}

/// Whether a process with `pid` is still running. Only a pid the system
/// says names no process (or one that has exited) is gone: a process that
/// cannot be opened (another user's) exists.
pub fn process_exists(pid: i32) -> bool {
    use windows_sys::Win32::Foundation::{
        ERROR_ACCESS_DENIED, ERROR_INVALID_PARAMETER, STILL_ACTIVE,
    };
    use windows_sys::Win32::System::Threading::PROCESS_QUERY_INFORMATION;
    let Ok(pid) = u32::try_from(pid) else {
        return false;
    };
    let exit_code = |access: u32| -> io::Result<u32> {
        let process = Process::open(pid, access)?;
        let mut code = 0u32;
        // SAFETY: an open process handle.
        match unsafe { GetExitCodeProcess(process.0, &mut code) } {
            0 => Err(io::Error::last_os_error()),
            _ => Ok(code),
        }
    };
    let denied = |e: &io::Error| e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32);
    // Windows takes the limited right; Wine wants the full one.
    let code = match exit_code(PROCESS_QUERY_LIMITED_INFORMATION) {
        Err(e) if denied(&e) => exit_code(PROCESS_QUERY_INFORMATION),
        code => code,
    };
    match code {
        Ok(code) => code == STILL_ACTIVE as u32,
        Err(e) => e.raw_os_error() != Some(ERROR_INVALID_PARAMETER as i32),
    }
}

/// Ends process `pid`. Windows has no polite stop for a process without a
/// console of its own, so this terminates it: a `hark run` so ended does
/// not stop its agent first (not covered on Windows).
pub fn ask_to_end(pid: u32) {
    if let Ok(process) = Process::open(pid, PROCESS_TERMINATE) {
        // SAFETY: an open process handle with the terminate right.
        unsafe { TerminateProcess(process.0, 1) };
    }
}

/// Windows has no soft limit on handles to raise.
pub fn raise_open_file_limit() {}

/// The owner of a file: not read on Windows, where hark's directories take
/// the ACL of the user's profile (this user stands for every owner).
pub fn owner(_meta: &std::fs::Metadata) -> User {
    own_user()
}

/// This process's parent, as the process snapshot tells it (0 when it
/// cannot be read).
pub fn parent_pid() -> u32 {
    process_entry(std::process::id()).map_or(0, |entry| entry.ppid)
}

/// A process as the system's snapshot tells it.
#[derive(Debug, Clone)]
pub struct ProcessEntry {
    pub ppid: u32,
    /// Its executable's name.
    pub name: String,
    /// When it was created (100 ns ticks since 1601), if it can be opened.
    pub created: Option<u64>,
}

/// A Toolhelp snapshot of `what` (its processes, its threads), closed
/// when dropped.
fn snapshot(what: u32) -> io::Result<Process> {
    // SAFETY: no pointer is passed; the handle is checked and owned below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(what, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    Ok(Process(snapshot))
}

/// The process snapshot's (Toolhelp's) entry for `pid`.
pub fn process_entry(pid: u32) -> io::Result<ProcessEntry> {
    let snapshot = snapshot(TH32CS_SNAPPROCESS)?;
    // SAFETY: PROCESSENTRY32W is plain data; dwSize is set as required.
    let mut entry: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
    // SAFETY: a live snapshot and an entry of the right size.
    let mut more = unsafe { Process32FirstW(snapshot.0, &mut entry) } != 0;
    while more {
        if entry.th32ProcessID == pid {
            let len = entry.szExeFile.iter().position(|&c| c == 0).unwrap_or(0);
            return Ok(ProcessEntry {
                ppid: entry.th32ParentProcessID,
                name: String::from_utf16_lossy(&entry.szExeFile[..len]),
                created: created(pid),
            });
        }
        // SAFETY: as above.
        more = unsafe { Process32NextW(snapshot.0, &mut entry) } != 0;
    }
    Err(io::Error::new(io::ErrorKind::NotFound, "no such process"))
}

/// When `pid` was created (100 ns ticks since 1601), if it can be opened.
fn created(pid: u32) -> Option<u64> {
    let process = Process::open(pid, PROCESS_QUERY_LIMITED_INFORMATION).ok()?;
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: an open process handle and four FILETIMEs.
    let ok =
        unsafe { GetProcessTimes(process.0, &mut created, &mut exited, &mut kernel, &mut user) };
    (ok != 0).then(|| (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
}

/// The user's Run key, whose values Windows starts at login.
pub const RUN_KEY: &str = r"HKCU\Software\Microsoft\Windows\CurrentVersion\Run";
/// The Run key under `HKEY_CURRENT_USER`.
const RUN_SUBKEY: &str = r"Software\Microsoft\Windows\CurrentVersion\Run";

fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain([0]).collect()
}

/// A registry call's status as a result.
fn status(code: u32) -> io::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(code as i32))
    }
}

/// Sets the Run key's value `name` to `command` (a string value).
pub fn set_run_value(name: &str, command: &str) -> io::Result<()> {
    use windows_sys::Win32::System::Registry::{HKEY_CURRENT_USER, REG_SZ, RegSetKeyValueW};
    let (key, name, data) = (wide(RUN_SUBKEY), wide(name), wide(command));
    // SAFETY: NUL-terminated strings; the data's size in bytes, its NUL with it.
    status(unsafe {
        RegSetKeyValueW(
            HKEY_CURRENT_USER,
            key.as_ptr(),
            name.as_ptr(),
            REG_SZ,
            data.as_ptr().cast(),
            (data.len() * 2) as u32,
        )
    })
}

/// Removes the Run key's value `name` (`NotFound` when there is none).
pub fn remove_run_value(name: &str) -> io::Result<()> {
    use windows_sys::Win32::System::Registry::{HKEY_CURRENT_USER, RegDeleteKeyValueW};
    let (key, name) = (wide(RUN_SUBKEY), wide(name));
    // SAFETY: NUL-terminated strings.
    status(unsafe { RegDeleteKeyValueW(HKEY_CURRENT_USER, key.as_ptr(), name.as_ptr()) })
}

/// Whether the Run key has a value `name`.
pub fn has_run_value(name: &str) -> bool {
    use windows_sys::Win32::System::Registry::{HKEY_CURRENT_USER, RRF_RT_REG_SZ, RegGetValueW};
    let (key, name) = (wide(RUN_SUBKEY), wide(name));
    let mut size = 0u32;
    // SAFETY: NUL-terminated strings; no buffer, so only the size is asked.
    let code = unsafe {
        RegGetValueW(
            HKEY_CURRENT_USER,
            key.as_ptr(),
            name.as_ptr(),
            RRF_RT_REG_SZ,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut size,
        )
    };
    code == 0
}

/// The app's own AppUserModelID: its Tauri identifier, which the Start-menu
/// shortcut hark's installer makes carries (`scripts/windows/hark.nsi`).
pub const APP_ID: &str = "dev.hark.app";

/// PowerShell's AppUserModelID, which every Windows has registered: the
/// app's toasts go under it when no shortcut carries [`APP_ID`] (hark run
/// from where it was built, or unpacked by hand).
pub const POWERSHELL_APP_ID: &str =
    r"{1AC14E77-02E7-4E5D-B744-2EB1AE5198B7}\WindowsPowerShell\v1.0\powershell.exe";

/// Where hark's installer puts its Start-menu shortcut, for this user
/// (`%APPDATA%\Microsoft\Windows\Start Menu\Programs\hark.lnk`).
pub fn start_menu_shortcut() -> Option<std::path::PathBuf> {
    let appdata = std::env::var_os("APPDATA")?;
    Some(std::path::PathBuf::from(appdata).join(r"Microsoft\Windows\Start Menu\Programs\hark.lnk"))
}

/// The AppUserModelID hark's Start-menu shortcut carries: `None` when there
/// is no shortcut, `Some(None)` when it carries none.
pub fn shortcut_app_id() -> Option<Option<String>> {
    let link = std::fs::read(start_menu_shortcut()?).ok()?;
    Some(super::shell_link::app_user_model_id(&link))
}

/// The AppUserModelID the app's toasts go under (`src-tauri/src/notify/
/// toast.rs`): its own when its Start-menu shortcut carries it (Windows
/// shows a desktop app's toasts only under an id a shortcut carries), else
/// PowerShell's.
pub fn toast_app_id() -> &'static str {
    match shortcut_app_id() {
        Some(Some(id)) if id == APP_ID => APP_ID,
        _ => POWERSHELL_APP_ID,
    }
}

/// A DWORD value under `HKEY_CURRENT_USER\subkey`, if it is there.
pub fn user_dword(subkey: &str, name: &str) -> Option<u32> {
    use windows_sys::Win32::System::Registry::{HKEY_CURRENT_USER, RRF_RT_REG_DWORD, RegGetValueW};
    let (key, name) = (wide(subkey), wide(name));
    let mut data = 0u32;
    let mut size = std::mem::size_of::<u32>() as u32;
    // SAFETY: NUL-terminated strings; a DWORD's room, its size given.
    let code = unsafe {
        RegGetValueW(
            HKEY_CURRENT_USER,
            key.as_ptr(),
            name.as_ptr(),
            RRF_RT_REG_DWORD,
            std::ptr::null_mut(),
            (&raw mut data).cast(),
            &mut size,
        )
    };
    (code == 0).then_some(data)
}

/// Whether a top-level window of class `class` exists in this session
/// (the taskbar is `Shell_TrayWnd`, home of the notification area).
pub fn window_class_exists(class: &str) -> bool {
    use windows_sys::Win32::UI::WindowsAndMessaging::FindWindowW;
    let class = wide(class);
    // SAFETY: a NUL-terminated class name, no title.
    !unsafe { FindWindowW(class.as_ptr(), std::ptr::null()) }.is_null()
}

/// Whether `path` is a file Windows runs.
pub fn runnable(path: &Path) -> bool {
    path.is_file()
        && path.extension().is_some_and(|ext| {
            ["exe", "cmd", "bat", "com"]
                .iter()
                .any(|e| ext.eq_ignore_ascii_case(e))
        })
}
