//! The command line as `claude -p` takes it, and its errors worded as the
//! real CLI words them.

/// What is wrong with the command line, worded as the real CLI words it.
#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error("error: option '{0}' argument missing")]
    MissingValue(String),
    #[error("error: unknown option '{0}'")]
    Unknown(String),
}

/// What the fake emulates of the command line.
#[derive(Debug, Default)]
pub struct Args {
    pub prompt: Option<String>,
    pub output_format: Option<String>,
    pub verbose: bool,
    pub allowed: Vec<String>,
    pub disallowed: Vec<String>,
    pub mcp_configs: Vec<String>,
    pub resume: Option<String>,
    pub permission_prompt_tool: Option<String>,
    pub settings: Vec<String>,
}

fn tools(value: &str) -> Vec<String> {
    value
        .split([',', ' '])
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

pub fn parse(argv: &[String]) -> Result<Args, ArgsError> {
    let mut args = Args::default();
    let mut i = 0;
    let value = |i: &mut usize| -> Result<String, ArgsError> {
        *i += 1;
        argv.get(*i)
            .cloned()
            .ok_or_else(|| ArgsError::MissingValue(argv[*i - 1].clone()))
    };
    while i < argv.len() {
        let arg = argv[i].as_str();
        match arg {
            "-p" | "--print" => {}
            "--verbose" => args.verbose = true,
            "--output-format" => args.output_format = Some(value(&mut i)?),
            "--settings" => args.settings.push(value(&mut i)?),
            "--append-system-prompt" | "--model" => {
                value(&mut i)?;
            }
            "--permission-prompt-tool" => args.permission_prompt_tool = Some(value(&mut i)?),
            "--resume" | "-r" => args.resume = Some(value(&mut i)?),
            "--allowedTools" | "--allowed-tools" | "--disallowedTools" | "--disallowed-tools"
            | "--mcp-config" => {
                let mut values = Vec::new();
                while i + 1 < argv.len() && !argv[i + 1].starts_with('-') {
                    i += 1;
                    values.push(argv[i].clone());
                }
                if values.is_empty() {
                    return Err(ArgsError::MissingValue(arg.to_owned()));
                }
                match arg {
                    "--allowedTools" | "--allowed-tools" => {
                        args.allowed.extend(values.iter().flat_map(|v| tools(v)))
                    }
                    "--disallowedTools" | "--disallowed-tools" => {
                        args.disallowed.extend(values.iter().flat_map(|v| tools(v)))
                    }
                    _ => args.mcp_configs.extend(values),
                }
            }
            other if other.starts_with('-') => {
                return Err(ArgsError::Unknown(other.to_owned()));
            }
            prompt => args.prompt = Some(prompt.to_owned()),
        }
        i += 1;
    }
    Ok(args)
}

/// The text of a `--settings` or `--mcp-config` value: the value itself
/// when it is inline JSON, else the file it names.
pub fn inline_or_file(value: &str) -> std::io::Result<String> {
    if value.trim_start().starts_with('{') {
        Ok(value.to_owned())
    } else {
        std::fs::read_to_string(value)
    }
}
