//! Where the tools run: a [`RemoteTarget`] parsed from a URI, and the
//! command line that opens a channel to a POSIX shell there.

use std::fmt;
use std::path::PathBuf;

use crate::RemoteError;

/// A place to run tools, named by a URI:
///
/// | URI | channel |
/// |---|---|
/// | `ssh://[user@]host[:port][/path]` | the system `ssh` client (your `~/.ssh/config`, known hosts, agent and `ProxyJump` apply) |
/// | `docker://container[/path]` | `docker exec -i container sh` |
/// | `podman://container[/path]` | `podman exec -i container sh` |
/// | `kubectl://[namespace/]pod[/container]//path` | `kubectl exec -i [-n namespace] pod [-c container] -- sh` |
/// | `exec:COMMAND` | `sh -c COMMAND`, which must start a POSIX shell on the other side reading its stdin |
///
/// The path is the working directory on the remote side; `/~/dir` is `dir`
/// under the remote user's home, and without a path the tools run in the
/// remote login directory. For `kubectl://`, a `//` ends the names and
/// starts the path (`kubectl://shop/web-0/app//srv/app`); without one, the
/// first segment is the pod and the rest is the path.
///
/// ```
/// use agent_remote::RemoteTarget;
/// let t = RemoteTarget::parse("ssh://deploy@build-box:2222/srv/app").unwrap();
/// assert_eq!(t.to_string(), "ssh://deploy@build-box:2222/srv/app");
/// let argv = t.command_line(None);
/// assert_eq!(argv[0], "ssh");
/// assert!(argv.ends_with(&["-p".into(), "2222".into(), "--".into(), "deploy@build-box".into(), "sh".into()]));
/// assert!(RemoteTarget::parse("ssh://-oProxyCommand=x/").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteTarget {
    /// OpenSSH.
    Ssh {
        /// The remote user, if given.
        user: Option<String>,
        /// Host name or address (as `ssh` resolves it, aliases included).
        host: String,
        /// Port, if given.
        port: Option<u16>,
        /// Working directory.
        path: Option<String>,
    },
    /// A container, through `docker` or `podman`.
    Container {
        /// `docker` or `podman`.
        engine: ContainerEngine,
        /// Container name or id.
        container: String,
        /// Working directory.
        path: Option<String>,
    },
    /// A Kubernetes pod, through `kubectl exec`.
    Kubectl {
        /// Namespace, if given.
        namespace: Option<String>,
        /// Pod.
        pod: String,
        /// Container, if given.
        container: Option<String>,
        /// Working directory.
        path: Option<String>,
    },
    /// Any command giving a stdio channel to a shell.
    Exec {
        /// The command, run with `sh -c`.
        command: String,
    },
}

/// A container engine with docker's command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerEngine {
    /// `docker`.
    Docker,
    /// `podman`.
    Podman,
}

impl ContainerEngine {
    fn program(self) -> &'static str {
        match self {
            ContainerEngine::Docker => "docker",
            ContainerEngine::Podman => "podman",
        }
    }
}

fn invalid(uri: &str, reason: impl Into<String>) -> RemoteError {
    RemoteError::InvalidUri {
        uri: uri.to_string(),
        reason: reason.into(),
    }
}

/// A name that reaches a command line as an argument must not read as an
/// option, and must not be empty.
fn name(uri: &str, what: &str, text: &str) -> Result<String, RemoteError> {
    if text.is_empty() {
        return Err(invalid(uri, format!("the {what} is missing")));
    }
    if text.starts_with('-') || text.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(invalid(
            uri,
            format!(
                "{text:?} is not a valid {what} (no leading '-', blanks or control characters)"
            ),
        ));
    }
    Ok(text.to_string())
}

/// A user or host name for ssh: letters, digits and `._-` (a host may also
/// hold `:` and `%` of an IPv6 address). Anything else could mean something
/// to ssh's `%` tokens, `ProxyCommand` or a shell.
fn ssh_word(uri: &str, what: &str, text: &str) -> Result<String, RemoteError> {
    let text = name(uri, what, text)?;
    let ipv6 = what == "host" && text.contains(':');
    let allowed = |c: char| {
        c.is_ascii_alphanumeric()
            || matches!(c, '.' | '_' | '-')
            || (ipv6 && matches!(c, ':' | '%'))
    };
    if text.chars().all(allowed) {
        Ok(text)
    } else {
        Err(invalid(
            uri,
            format!("{text:?} is not a valid {what} (letters, digits, '.', '_' and '-' only)"),
        ))
    }
}

/// `/~/x` → `x` (relative to the login directory), `/~` or `` → none.
fn working_dir(rest: &str) -> Option<String> {
    if rest.is_empty() || rest == "/" || rest == "/~" || rest == "/~/" {
        return None;
    }
    match rest.strip_prefix("/~/") {
        Some(relative) => Some(relative.to_string()),
        None => Some(rest.to_string()),
    }
}

impl RemoteTarget {
    /// Parses a URI (see the type's docs).
    ///
    /// # Errors
    /// [`RemoteError::InvalidUri`] naming what is wrong.
    pub fn parse(uri: &str) -> Result<Self, RemoteError> {
        if let Some(command) = uri.strip_prefix("exec:") {
            if command.trim().is_empty() {
                return Err(invalid(uri, "exec: needs a command"));
            }
            return Ok(RemoteTarget::Exec {
                command: command.to_string(),
            });
        }
        let Some((scheme, rest)) = uri.split_once("://") else {
            return Err(invalid(
                uri,
                "expected ssh://, docker://, podman://, kubectl:// or exec:",
            ));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        match scheme {
            "ssh" => {
                let (user, hostport) = match authority.rsplit_once('@') {
                    Some((u, h)) => (Some(ssh_word(uri, "user", u)?), h),
                    None => (None, authority),
                };
                let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
                    let Some((host, after)) = v6.split_once(']') else {
                        return Err(invalid(uri, "an IPv6 address needs its closing ']'"));
                    };
                    (host, after.strip_prefix(':'))
                } else {
                    match hostport.rsplit_once(':') {
                        Some((h, p)) => (h, Some(p)),
                        None => (hostport, None),
                    }
                };
                let port = match port {
                    Some(p) => Some(
                        p.parse::<u16>()
                            .map_err(|_| invalid(uri, format!("{p:?} is not a port")))?,
                    ),
                    None => None,
                };
                Ok(RemoteTarget::Ssh {
                    user,
                    host: ssh_word(uri, "host", host)?,
                    port,
                    path: working_dir(path),
                })
            }
            "docker" | "podman" => Ok(RemoteTarget::Container {
                engine: if scheme == "docker" {
                    ContainerEngine::Docker
                } else {
                    ContainerEngine::Podman
                },
                container: name(uri, "container", authority)?,
                path: working_dir(path),
            }),
            "kubectl" => {
                let (names, path) = match rest.split_once("//") {
                    Some((names, path)) => (names.to_string(), format!("/{path}")),
                    None => (authority.to_string(), path.to_string()),
                };
                let parts: Vec<&str> = names.split('/').collect();
                let (namespace, pod, container) = match parts.as_slice() {
                    [pod] => (None, *pod, None),
                    [ns, pod] => (Some(*ns), *pod, None),
                    [ns, pod, c] => (Some(*ns), *pod, Some(*c)),
                    _ => return Err(invalid(uri, "expected [namespace/]pod[/container]")),
                };
                Ok(RemoteTarget::Kubectl {
                    namespace: namespace.map(|n| name(uri, "namespace", n)).transpose()?,
                    pod: name(uri, "pod", pod)?,
                    container: container.map(|c| name(uri, "container", c)).transpose()?,
                    path: working_dir(&path),
                })
            }
            other => Err(invalid(
                uri,
                format!("unknown scheme {other:?}: expected ssh, docker, podman, kubectl or exec"),
            )),
        }
    }

    /// The remote working directory the URI names, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            RemoteTarget::Ssh { path, .. }
            | RemoteTarget::Container { path, .. }
            | RemoteTarget::Kubectl { path, .. } => path.as_deref(),
            RemoteTarget::Exec { .. } => None,
        }
    }

    /// The local command line that opens the channel: its standard input
    /// and output reach a POSIX shell on the other side. For `ssh://`,
    /// `control_dir` is where the multiplexing socket lives (`None`: no
    /// multiplexing).
    pub fn command_line(&self, control_dir: Option<&std::path::Path>) -> Vec<String> {
        self.command_line_with(control_dir, &[])
    }

    /// [`command_line`](Self::command_line) with extra OpenSSH options
    /// (each passed as `-o OPTION`; ignored for other transports).
    pub fn command_line_with(
        &self,
        control_dir: Option<&std::path::Path>,
        ssh_options: &[String],
    ) -> Vec<String> {
        let mut argv: Vec<String> = Vec::new();
        match self {
            RemoteTarget::Ssh {
                user, host, port, ..
            } => {
                argv.extend(["ssh".to_string(), "-T".to_string()]);
                // The caller's options first: for each option OpenSSH uses
                // the first value it is given, so these override ours.
                for option in ssh_options {
                    argv.extend(["-o".to_string(), option.clone()]);
                }
                argv.extend(
                    [
                        // Never prompt: a password or host-key question on a
                        // terminal the agent does not own would hang.
                        "-o",
                        "BatchMode=yes",
                        "-o",
                        "ServerAliveInterval=15",
                        "-o",
                        "ServerAliveCountMax=3",
                        "-o",
                        "ConnectTimeout=20",
                    ]
                    .map(String::from),
                );
                if let Some(dir) = control_dir {
                    // A master opened with other options (another known
                    // hosts file, another identity) is not reused.
                    let mut hash: u32 = 0x811c_9dc5;
                    for b in ssh_options.join("\0").bytes() {
                        hash = (hash ^ u32::from(b)).wrapping_mul(0x0100_0193);
                    }
                    argv.extend([
                        "-o".to_string(),
                        "ControlMaster=auto".to_string(),
                        "-o".to_string(),
                        format!("ControlPath={}/%C-{hash:08x}", dir.display()),
                        "-o".to_string(),
                        "ControlPersist=60".to_string(),
                    ]);
                }
                if let Some(port) = port {
                    argv.extend(["-p".to_string(), port.to_string()]);
                }
                argv.push("--".to_string());
                argv.push(match user {
                    Some(u) => format!("{u}@{host}"),
                    None => host.clone(),
                });
                argv.push("sh".to_string());
            }
            RemoteTarget::Container {
                engine, container, ..
            } => {
                argv.extend([
                    engine.program().to_string(),
                    "exec".to_string(),
                    "-i".to_string(),
                    container.clone(),
                    "sh".to_string(),
                ]);
            }
            RemoteTarget::Kubectl {
                namespace,
                pod,
                container,
                ..
            } => {
                argv.extend(["kubectl".to_string(), "exec".to_string(), "-i".to_string()]);
                if let Some(ns) = namespace {
                    argv.extend(["-n".to_string(), ns.clone()]);
                }
                argv.push(pod.clone());
                if let Some(c) = container {
                    argv.extend(["-c".to_string(), c.clone()]);
                }
                argv.extend(["--".to_string(), "sh".to_string()]);
            }
            RemoteTarget::Exec { command } => {
                argv.extend(["sh".to_string(), "-c".to_string(), command.clone()]);
            }
        }
        argv
    }

    /// Whether this is an SSH target (the ones that can multiplex).
    pub fn is_ssh(&self) -> bool {
        matches!(self, RemoteTarget::Ssh { .. })
    }
}

impl fmt::Display for RemoteTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = |p: &Option<String>| match p {
            Some(p) if p.starts_with('/') => p.clone(),
            Some(p) => format!("/~/{p}"),
            None => String::new(),
        };
        match self {
            RemoteTarget::Ssh {
                user,
                host,
                port,
                path: p,
            } => {
                write!(f, "ssh://")?;
                if let Some(u) = user {
                    write!(f, "{u}@")?;
                }
                if host.contains(':') {
                    write!(f, "[{host}]")?;
                } else {
                    write!(f, "{host}")?;
                }
                if let Some(port) = port {
                    write!(f, ":{port}")?;
                }
                write!(f, "{}", path(p))
            }
            RemoteTarget::Container {
                engine,
                container,
                path: p,
            } => write!(f, "{}://{container}{}", engine.program(), path(p)),
            RemoteTarget::Kubectl {
                namespace,
                pod,
                container,
                path: p,
            } => {
                write!(f, "kubectl://")?;
                if let Some(ns) = namespace {
                    write!(f, "{ns}/")?;
                }
                write!(f, "{pod}")?;
                if let Some(c) = container {
                    write!(f, "/{c}")?;
                }
                match p {
                    Some(p) if p.starts_with('/') => write!(f, "/{p}"),
                    Some(p) => write!(f, "///~/{p}"),
                    None => Ok(()),
                }
            }
            RemoteTarget::Exec { command } => write!(f, "exec:{command}"),
        }
    }
}

/// A local directory for SSH multiplexing sockets: `$XDG_RUNTIME_DIR` or
/// `/tmp/coding-agent-<uid>`, created 0700 and refused when someone else
/// owns it (a socket there could be another user's).
///
/// # Errors
/// The directory cannot be created or is not ours.
pub fn control_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = rustix::process::geteuid().as_raw();
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|p| p.join("coding-agent"))
        .unwrap_or_else(|| PathBuf::from(format!("/tmp/coding-agent-{uid}")));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&base);
    let meta = std::fs::symlink_metadata(&base)?;
    if !meta.is_dir() || meta.uid() != uid {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is not a directory of ours", base.display()),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(uri: &str) -> RemoteTarget {
        let t = RemoteTarget::parse(uri).unwrap_or_else(|e| panic!("{uri}: {e}"));
        assert_eq!(RemoteTarget::parse(&t.to_string()).unwrap(), t, "{uri}");
        t
    }

    #[test]
    fn ssh_uris() {
        assert_eq!(
            round_trip("ssh://box"),
            RemoteTarget::Ssh {
                user: None,
                host: "box".into(),
                port: None,
                path: None
            }
        );
        assert_eq!(
            round_trip("ssh://me@[::1]:2222/~/proj"),
            RemoteTarget::Ssh {
                user: Some("me".into()),
                host: "::1".into(),
                port: Some(2222),
                path: Some("proj".into())
            }
        );
        for bad in [
            "ssh://",
            "ssh://host:notaport/x",
            "ssh://-oProxyCommand=touch%20x",
            "ssh://-l/x",
            "ssh://a b/x",
            "ssh://[::1/x",
            "ssh://a$(id)b/x",
            "ssh://`id`@h/x",
            "ssh://h%n/x",
            "ftp://host/x",
            "host:/x",
            "exec:  ",
        ] {
            assert!(RemoteTarget::parse(bad).is_err(), "{bad}");
        }
        let argv = round_trip("ssh://box/srv").command_line(Some(std::path::Path::new("/run/x")));
        assert!(
            argv.iter().any(|a| a.starts_with("ControlPath=/run/x/%C-")),
            "{argv:?}"
        );
        let other = round_trip("ssh://box/srv").command_line_with(
            Some(std::path::Path::new("/run/x")),
            &["IdentityFile=/k".into()],
        );
        let path = |argv: &[String]| argv.iter().find(|a| a.starts_with("ControlPath=")).cloned();
        assert_ne!(path(&argv), path(&other), "other options, another master");
        assert!(argv.contains(&"BatchMode=yes".to_string()));
        assert_eq!(argv[argv.len() - 3..], ["--", "box", "sh"]);
    }

    #[test]
    fn container_and_kubernetes_command_lines() {
        assert_eq!(
            round_trip("docker://web/app").command_line(None),
            ["docker", "exec", "-i", "web", "sh"]
        );
        assert_eq!(
            round_trip("podman://db").command_line(None),
            ["podman", "exec", "-i", "db", "sh"]
        );
        let k = round_trip("kubectl://shop/web-0/app//srv/app");
        assert_eq!(k.path(), Some("/srv/app"));
        assert_eq!(
            k.command_line(None),
            [
                "kubectl", "exec", "-i", "-n", "shop", "web-0", "-c", "app", "--", "sh"
            ]
        );
        let k = round_trip("kubectl://web-0/srv/app");
        assert_eq!(
            k.command_line(None),
            ["kubectl", "exec", "-i", "web-0", "--", "sh"]
        );
        assert_eq!(k.path(), Some("/srv/app"));
        assert!(RemoteTarget::parse("kubectl://a/b/c/d//x").is_err());
        assert!(RemoteTarget::parse("docker://--privileged/x").is_err());
        assert_eq!(
            round_trip("exec:setpriv --reuid 1000 sh").command_line(None),
            ["sh", "-c", "setpriv --reuid 1000 sh"]
        );
    }
}
