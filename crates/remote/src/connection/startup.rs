//! Bringing the helper up: the start-up script sent to the other side,
//! the upload it may ask for, the greeting, and how a transport that ended
//! too early is told apart.

use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use agent_sandbox::SandboxMode;
use sha2::Digest;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use crate::protocol::{
    Hello, LINE_PREFIX, MAX_RESPONSE_BODY, PROTOCOL_VERSION, READY_LINE, Reply, Response, Start,
    read_frame_limited, write_frame,
};
use crate::{RemoteError, RemoteOptions, RemoteTarget};

use super::lock;

/// The shell script that brings the helper up on the other side: use a
/// compatible `coding-agent` on PATH, else a cached upload, else ask for
/// an upload. It is one `{ ... }` group so the shell reads all of it before
/// running any of it: nothing after it on stdin is taken for script.
pub(super) fn bootstrap_script(target: &RemoteTarget, checksum: &str) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let cd = match target.path() {
        Some(p) => format!("cd -- {} 2>/dev/null || fail nodir\n", quote(p)),
        None => String::new(),
    };
    // The sandbox travels in the Start frame, never on a command line.
    let args = "helper";
    format!(
        r#"{{
fail() {{ echo "{LINE_PREFIX}$*"; exit 1; }}
{cd}if command -v coding-agent >/dev/null 2>&1 && coding-agent helper --accepts {PROTOCOL_VERSION} >/dev/null 2>&1; then exec coding-agent {args}; fi
d="${{XDG_CACHE_HOME:-$HOME/.cache}}/coding-agent/helpers"
b="$d/coding-agent-{checksum}"
if [ -f "$b" ] && [ -x "$b" ] && [ -O "$b" ] && [ ! -L "$b" ] && [ -O "$d" ] && [ ! -L "$d" ]; then exec "$b" {args}; fi
echo "{LINE_PREFIX}need $(uname -s) $(uname -m)"
read n || exit 1
umask 077
mkdir -p "$d" || fail fail cannot create "$d"
[ -O "$d" ] && [ ! -L "$d" ] || fail fail "$d" is not owned by this user
chmod 700 "$d" || fail fail cannot protect "$d"
t="$d/.upload.$$"
head -c "$n" > "$t" || fail fail cannot write "$t"
s=$( (sha256sum "$t" || shasum -a 256 "$t") 2>/dev/null | cut -d' ' -f1)
[ "$s" = "{checksum}" ] || {{ rm -f "$t"; fail fail the upload does not match its checksum, or neither sha256sum nor shasum is installed; }}
chmod 700 "$t" && mv -f "$t" "$b" && exec "$b" {args}
fail fail cannot run "$b"
}}
"#
    )
}

/// Text from the other side, made safe to print: control characters and
/// escape sequences removed, at most 2000 characters.
pub(super) fn clean(text: &str) -> String {
    let text = agent_tool::sanitize_terminal_text(text).into_owned();
    match text.char_indices().nth(2000) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// The SHA-256 of the helper binary, computed once per path.
pub(super) fn checksum_of(path: &Path) -> io::Result<String> {
    static CACHE: Mutex<Vec<(std::path::PathBuf, String)>> = Mutex::new(Vec::new());
    if let Some((_, sum)) = lock(&CACHE).iter().find(|(p, _)| p == path) {
        return Ok(sum.clone());
    }
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let sum: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    lock(&CACHE).push((path.to_path_buf(), sum.clone()));
    Ok(sum)
}

/// `uname -s` / `uname -m` in Rust's names.
fn matches_local(os: &str, arch: &str) -> bool {
    let os = os.to_ascii_lowercase();
    let arch = match arch {
        "amd64" => "x86_64",
        "arm64" => "aarch64",
        other => other,
    };
    os == std::env::consts::OS && arch == std::env::consts::ARCH
}

/// Classifies a transport that ended before the helper was ready.
pub(super) fn classify(target: &RemoteTarget, status: Option<i32>, stderr: &str) -> RemoteError {
    // The remote's words reach the user's terminal: no escape sequences.
    let detail = clean(stderr.trim());
    let lower = detail.to_ascii_lowercase();
    let target_text = target.to_string();
    if target.is_ssh() {
        if lower.contains("host key verification failed")
            || lower.contains("remote host identification has changed")
            || lower.contains("no matching host key")
        {
            return RemoteError::HostKey {
                target: target_text,
                detail,
            };
        }
        if lower.contains("permission denied") || lower.contains("too many authentication failures")
        {
            return RemoteError::Auth {
                target: target_text,
                detail,
            };
        }
        if status == Some(255) {
            return RemoteError::Unreachable {
                target: target_text,
                detail,
            };
        }
    }
    RemoteError::Closed {
        target: target_text,
        status,
        detail,
    }
}

/// Sends the script, answers an upload request, and reads the greeting.
pub(super) async fn bring_up(
    target: &RemoteTarget,
    options: &RemoteOptions,
    script: &str,
    stdin: &mut ChildStdin,
    stdout: &mut BufReader<ChildStdout>,
) -> Result<Hello, RemoteError> {
    let closed = || RemoteError::Closed {
        target: target.to_string(),
        status: None,
        detail: String::new(),
    };
    stdin
        .write_all(script.as_bytes())
        .await
        .map_err(|_| closed())?;
    stdin.flush().await.map_err(|_| closed())?;
    let mut uploaded = false;
    let mut noise = 0usize;
    loop {
        let mut line = Vec::new();
        let n = (&mut *stdout)
            .take(4096)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|_| closed())?;
        if n == 0 {
            return Err(closed());
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end();
        if line == READY_LINE {
            break;
        }
        let Some(said) = line.strip_prefix(LINE_PREFIX) else {
            // A login banner or a profile's chatter: not ours.
            noise += 1;
            if noise > 1000 {
                return Err(RemoteError::Protocol {
                    detail: "the remote shell prints endlessly instead of starting the helper"
                        .into(),
                });
            }
            tracing::debug!(%line, "remote: ignored output before the helper");
            continue;
        };
        let mut words = said.split_whitespace();
        match words.next() {
            Some("need") => {
                let os = clean(words.next().unwrap_or("?"));
                let arch = clean(words.next().unwrap_or("?"));
                let binary = match &options.helper_binary {
                    Some(b) if !uploaded && options.upload && matches_local(&os, &arch) => b,
                    _ => {
                        return Err(RemoteError::HelperMissing {
                            target: target.to_string(),
                            os,
                            arch,
                            uploadable: options.helper_binary.is_some() && options.upload,
                        });
                    }
                };
                let data = tokio::fs::read(binary)
                    .await
                    .map_err(|e| RemoteError::Upload {
                        detail: format!("cannot read {}: {e}", binary.display()),
                    })?;
                tracing::info!(bytes = data.len(), %target, "remote: uploading the helper");
                let upload = async {
                    stdin
                        .write_all(format!("{}\n", data.len()).as_bytes())
                        .await?;
                    stdin.write_all(&data).await?;
                    stdin.flush().await
                };
                if let Err(e) = upload.await {
                    // The script stopped reading: its last line says why.
                    let why = tokio::time::timeout(Duration::from_secs(2), async {
                        let mut line = String::new();
                        while matches!(stdout.read_line(&mut line).await, Ok(n) if n > 0) {
                            if let Some(said) = line.trim_end().strip_prefix(LINE_PREFIX)
                                && let Some(reason) = said.strip_prefix("fail ")
                            {
                                return Some(clean(reason));
                            }
                            line.clear();
                        }
                        None
                    })
                    .await
                    .ok()
                    .flatten();
                    return Err(RemoteError::Upload {
                        detail: why.unwrap_or_else(|| {
                            format!("the channel closed during the upload: {e}")
                        }),
                    });
                }
                uploaded = true;
            }
            Some("nodir") => {
                return Err(RemoteError::NoDirectory {
                    target: target.to_string(),
                    path: target.path().unwrap_or("").to_string(),
                });
            }
            Some("fail") => {
                return Err(RemoteError::Upload {
                    detail: clean(&words.collect::<Vec<_>>().join(" ")),
                });
            }
            _ => tracing::debug!(%line, "remote: unknown bootstrap line"),
        }
    }
    // The helper applies the sandbox this side decided, or refuses.
    let start = Start {
        protocol: PROTOCOL_VERSION,
        sandbox: options.sandbox.clone(),
    };
    write_frame(stdin, &start, &[])
        .await
        .map_err(|_| closed())?;
    stdin.flush().await.map_err(|_| closed())?;
    let frame = read_frame_limited::<_, Response>(stdout, MAX_RESPONSE_BODY)
        .await
        .map_err(|e| RemoteError::Protocol {
            detail: format!("no greeting from the helper: {e}"),
        })?;
    let hello = match frame {
        Some((
            Response {
                id: 0,
                reply: Reply::Hello(hello),
            },
            _,
        )) if hello.protocol == PROTOCOL_VERSION => hello,
        Some((
            Response {
                reply: Reply::Hello(hello),
                ..
            },
            _,
        )) => {
            return Err(RemoteError::Protocol {
                detail: format!(
                    "the helper speaks protocol {}, this program {PROTOCOL_VERSION}",
                    hello.protocol
                ),
            });
        }
        Some((
            Response {
                reply: Reply::Refused { reason },
                ..
            },
            _,
        )) => {
            return Err(RemoteError::Refused {
                target: target.to_string(),
                reason: clean(&reason),
            });
        }
        _ => {
            return Err(RemoteError::Protocol {
                detail: "the helper's first message is not a greeting".into(),
            });
        }
    };
    // A helper that says it runs with less than asked is not used.
    let asked = options.sandbox.mode();
    if options.sandbox.is_chosen()
        && asked != SandboxMode::Off
        && (hello.sandbox_mode < asked || hello.sandbox.is_none())
    {
        return Err(RemoteError::Refused {
            target: target.to_string(),
            reason: format!(
                "the helper confines with {} instead of the {asked} sandbox asked for",
                if hello.sandbox.is_none() {
                    "nothing".to_string()
                } else {
                    format!("mode {}", hello.sandbox_mode)
                }
            ),
        });
    }
    Ok(hello)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_quotes_the_directory_and_names_the_checksum() {
        let target = RemoteTarget::parse("ssh://h/srv/it's here").unwrap();
        let script = bootstrap_script(&target, "abc123");
        assert!(script.contains(r"cd -- '/srv/it'\''s here'"), "{script}");
        assert!(script.contains("coding-agent-abc123"));
        assert!(
            script.contains("coding-agent helper --accepts 2 "),
            "{script}"
        );
        assert!(script.contains("exec coding-agent helper;"), "{script}");
        assert!(script.starts_with('{') && script.trim_end().ends_with('}'));
    }

    #[test]
    fn ssh_failures_are_told_apart() {
        let t = RemoteTarget::parse("ssh://h").unwrap();
        assert!(matches!(
            classify(&t, Some(255), "Host key verification failed.\n"),
            RemoteError::HostKey { .. }
        ));
        assert!(matches!(
            classify(&t, Some(255), "me@h: Permission denied (publickey).\n"),
            RemoteError::Auth { .. }
        ));
        assert!(matches!(
            classify(
                &t,
                Some(255),
                "ssh: connect to host h port 22: Connection refused\n"
            ),
            RemoteError::Unreachable { .. }
        ));
        assert!(matches!(
            classify(&t, Some(1), "sh: 1: oops\n"),
            RemoteError::Closed { .. }
        ));
    }
}
