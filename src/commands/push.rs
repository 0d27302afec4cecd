//! `hark push setup`: the phone push's secrets, kept in the data
//! directory ([`hark_core::secrets`]) rather than in the config.

use hark_core::config::Config;
use hark_core::secrets::PushSecrets;

use crate::cli::PushCommand;
use crate::exit::ExitStatus;

pub fn run(command: PushCommand) -> ExitStatus {
    let PushCommand::Setup { topic, token_stdin } = command;
    let kept = match PushSecrets::load() {
        Ok(kept) => kept,
        Err(e) => {
            eprintln!("hark: {e}");
            return ExitStatus::Failure;
        }
    };
    let token = match token_stdin {
        true => {
            let mut line = String::new();
            if let Err(e) = std::io::stdin().read_line(&mut line) {
                eprintln!("hark: cannot read the token: {e}");
                return ExitStatus::Failure;
            }
            Some(line.trim().to_owned()).filter(|t| !t.is_empty())
        }
        false => kept.as_ref().and_then(|k| k.token.clone()),
    };
    let topic = topic
        .or(kept.map(|k| k.topic))
        .unwrap_or_else(PushSecrets::new_topic);
    if topic.is_empty()
        || topic.len() > 64
        || !topic
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    {
        eprintln!("hark: an ntfy topic is 1 to 64 of A-Z, a-z, 0-9, - and _");
        return ExitStatus::Refused;
    }
    let secrets = PushSecrets { topic, token };
    let path = match secrets.save() {
        Ok(path) => path,
        Err(e) => {
            eprintln!("hark: {e}");
            return ExitStatus::Failure;
        }
    };
    let server = Config::load()
        .ok()
        .and_then(|c| c.push.map(|p| p.ntfy.server))
        .unwrap_or_else(hark_core::config::Ntfy::default_server);
    println!("{}", secrets.topic);
    eprintln!(
        "hark: the topic{} kept in {} (owner-only; a confined agent does not see it)",
        if secrets.token.is_some() {
            " and token are"
        } else {
            " is"
        },
        path.display()
    );
    eprintln!(
        "hint: subscribe the phone's ntfy app to {}; the config's [push] names only the server: ntfy = {{ server = \"{server}\" }}",
        server.at(&[&secrets.topic], None),
    );
    ExitStatus::Success
}
