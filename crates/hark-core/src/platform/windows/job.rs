//! The job object a run's agent is held in, and the daemon's question of
//! whether a peer is in it (the membership test of "an agent cannot answer
//! itself" on Windows).

use super::*;

/// The name of the job a run's agent is held in: the run's id and its `hark
/// run`'s pid (a resumed run is another process, with a job of its own), in
/// the session's namespace. The daemon opens it by this name to ask whether
/// a peer is in it.
pub fn job_name(run: &str, pid: u32) -> String {
    format!(r"Local\hark-run-{run}-{pid}")
}

/// A named job object holding a run's agent and everything it starts, so
/// that stopping it stops the whole tree (Windows's process group), and so
/// that the daemon can tell any of them, however detached, by membership
/// ([`in_job`]). What is in it cannot leave: breakaway is not allowed (no
/// `JOB_OBJECT_LIMIT_BREAKAWAY_OK` nor `…_SILENT_BREAKAWAY_OK`, so a
/// `CREATE_BREAKAWAY_FROM_JOB` is refused), and its DACL grants the user
/// (and the object's owner, through `OWNER RIGHTS`) the query right alone,
/// so no member can open it to change those limits. Closing the job
/// (dropping it, or this process dying) kills what is left in it.
#[derive(Debug)]
pub struct ProcessTree(HANDLE);

// SAFETY: a job handle may be used and closed from any thread.
unsafe impl Send for ProcessTree {}
// SAFETY: as above; the handle is not mutated.
unsafe impl Sync for ProcessTree {}

/// A job's right to be asked who is in it (winnt.h; windows-sys has it
/// under SystemServices, a feature hark does not otherwise need).
const JOB_OBJECT_QUERY: u32 = 0x0004;

/// The creation flag that starts a process with its first thread
/// suspended, for [`ProcessTree::hold`] to resume once it is in the job.
pub const START_SUSPENDED: u32 = windows_sys::Win32::System::Threading::CREATE_SUSPENDED;

impl ProcessTree {
    /// Creates the job `name` ([`job_name`]). One of that name already there
    /// (someone made it first) is refused, not joined.
    pub fn named(name: &str) -> io::Result<ProcessTree> {
        use windows_sys::Win32::Foundation::{ERROR_ALREADY_EXISTS, GetLastError};
        use windows_sys::Win32::System::JobObjects::{
            CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
            JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
            SetInformationJobObject,
        };
        let sddl = format!(
            "D:P(A;;{JOB_OBJECT_QUERY:#x};;;OW)(A;;{JOB_OBJECT_QUERY:#x};;;{})",
            own_user()
        );
        let descriptor = Descriptor::of(&sddl)?;
        let mut attributes = SECURITY_ATTRIBUTES {
            nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: descriptor.0,
            bInheritHandle: 0,
        };
        let wide_name = wide(name);
        // SAFETY: attributes and a NUL-terminated name that outlive the
        // call; this handle has every right, whatever the DACL grants.
        let job = unsafe { CreateJobObjectW(&raw mut attributes, wide_name.as_ptr()) };
        if job.is_null() {
            return Err(io::Error::last_os_error());
        }
        let tree = ProcessTree(job);
        // SAFETY: reads this thread's last error, set by the call above.
        if unsafe { GetLastError() } == ERROR_ALREADY_EXISTS {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("a job named {name} was made by another process first"),
            ));
        }
        // SAFETY: plain data, zeroed as the API allows.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the job this value owns, and limits of the size given.
        let set = unsafe {
            SetInformationJobObject(
                tree.0,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if set == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(tree)
    }

    /// Puts `process` (a raw process handle, as tokio's `Child::raw_handle`
    /// gives it, of process `pid` started with [`START_SUSPENDED`]) in the
    /// job, then lets it run: nothing it starts is born outside.
    pub fn hold(&self, process: std::os::windows::io::RawHandle, pid: u32) -> io::Result<()> {
        use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
        // SAFETY: the job, and a live process handle the caller owns.
        if unsafe { AssignProcessToJobObject(self.0, process as HANDLE) } == 0 {
            return Err(io::Error::last_os_error());
        }
        resume(pid)
    }

    /// Ends every process in the job (the job stays, for the next turn).
    pub fn end(&self) {
        use windows_sys::Win32::System::JobObjects::TerminateJobObject;
        // SAFETY: the job this value owns.
        unsafe { TerminateJobObject(self.0, 1) };
    }
}

impl Drop for ProcessTree {
    fn drop(&mut self) {
        // SAFETY: the job this value owns; closing it kills what is left.
        unsafe { CloseHandle(self.0) };
    }
}

/// Resumes the threads of `pid`, a process started suspended (it has one).
fn resume(pid: u32) -> io::Result<()> {
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
    };
    use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};
    let snapshot = snapshot(TH32CS_SNAPTHREAD)?;
    // SAFETY: THREADENTRY32 is plain data; dwSize is set as required.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    let mut resumed = 0;
    // SAFETY: a live snapshot and an entry of the right size.
    let mut more = unsafe { Thread32First(snapshot.0, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: OpenThread takes any id; a null handle is its error.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if thread.is_null() {
                return Err(io::Error::last_os_error());
            }
            let thread = Process(thread);
            // SAFETY: an open thread handle with the resume right.
            if unsafe { ResumeThread(thread.0) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as above.
        more = unsafe { Thread32Next(snapshot.0, &mut entry) } != 0;
    }
    match resumed {
        0 => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("process {pid} has no thread to resume"),
        )),
        _ => Ok(()),
    }
}

/// Whether process `pid` is in the job named `job`. A job of that name that
/// is not there (its run's `hark run` is gone, and with it every member) has
/// nobody in it.
pub fn in_job(pid: u32, job: &str) -> io::Result<bool> {
    use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, ERROR_FILE_NOT_FOUND};
    use windows_sys::Win32::System::JobObjects::{IsProcessInJob, OpenJobObjectW};
    use windows_sys::Win32::System::Threading::PROCESS_QUERY_INFORMATION;
    let name = wide(job);
    // SAFETY: a NUL-terminated name; a null handle is the error.
    let handle = unsafe { OpenJobObjectW(JOB_OBJECT_QUERY, 0, name.as_ptr()) };
    if handle.is_null() {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() == Some(ERROR_FILE_NOT_FOUND as i32) {
            true => Ok(false),
            false => Err(e),
        };
    }
    let job = Process(handle);
    let ask = |access: u32| -> io::Result<bool> {
        let process = Process::open(pid, access)?;
        let mut member = 0;
        // SAFETY: an open process handle, a job handle with the query right.
        if unsafe { IsProcessInJob(process.0, job.0, &mut member) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(member != 0)
    };
    // Windows takes the limited right (which an elevated peer still grants
    // a plain daemon); Wine wants the full one.
    match ask(PROCESS_QUERY_LIMITED_INFORMATION) {
        Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => {
            ask(PROCESS_QUERY_INFORMATION)
        }
        asked => asked,
    }
}

/// A security descriptor made from SDDL, freed when dropped.
struct Descriptor(PSECURITY_DESCRIPTOR);

impl Descriptor {
    fn of(sddl: &str) -> io::Result<Descriptor> {
        let sddl = wide(sddl);
        let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: `sddl` is NUL-terminated; the descriptor is freed on drop.
        let made = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut descriptor,
                std::ptr::null_mut(),
            )
        };
        match made {
            0 => Err(io::Error::last_os_error()),
            _ => Ok(Descriptor(descriptor)),
        }
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: made by ConvertStringSecurityDescriptorToSecurityDescriptorW.
        unsafe { LocalFree(self.0) };
    }
}
