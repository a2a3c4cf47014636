//! AWS credentials and region, found the way the AWS CLI finds them for
//! the common cases: the environment, then the shared `credentials` and
//! `config` files of a profile. SSO, `credential_process`, web identity and
//! instance metadata are not supported (pass credentials explicitly).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// AWS access keys, with the session token of temporary credentials.
///
/// ```
/// use agent_ai::providers::bedrock::AwsCredentials;
/// let creds = AwsCredentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI").with_session_token("IQoJ");
/// assert_eq!(creds.session_token.as_deref(), Some("IQoJ"));
/// // Debug output shows neither the secret nor the token.
/// let shown = format!("{creds:?}");
/// assert!(shown.contains("AKIDEXAMPLE") && !shown.contains("wJalr") && !shown.contains("IQoJ"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN`, sent as `x-amz-security-token`.
    pub session_token: Option<String>,
}

impl AwsCredentials {
    /// Long-term keys (no session token).
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        AwsCredentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
        }
    }

    /// With a session token (temporary credentials).
    pub fn with_session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(token.into());
        self
    }
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// How a request to Bedrock proves who sends it.
#[derive(Clone, PartialEq, Eq)]
pub enum BedrockAuth {
    /// SigV4 with these credentials.
    Sigv4(AwsCredentials),
    /// An Amazon Bedrock API key, sent as `Authorization: Bearer`
    /// (`AWS_BEARER_TOKEN_BEDROCK`); nothing is signed.
    Bearer(String),
}

impl std::fmt::Debug for BedrockAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BedrockAuth::Sigv4(c) => f.debug_tuple("Sigv4").field(c).finish(),
            BedrockAuth::Bearer(_) => f.write_str("Bearer(<redacted>)"),
        }
    }
}

/// Why the credentials or region could not be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// A shared credentials or config file is malformed.
    #[error("{}:{line}: {message}", file.display())]
    BadFile {
        /// The file.
        file: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file exists but cannot be read.
    #[error("cannot read {}: {message}", file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// What the system said.
        message: String,
    },
    /// A profile has one of the two keys but not the other.
    #[error("profile {profile:?} in {}: {present} is set but {missing} is missing", file.display())]
    Incomplete {
        /// The profile.
        profile: String,
        /// The file.
        file: PathBuf,
        /// The key that is there.
        present: &'static str,
        /// The key that is not.
        missing: &'static str,
    },
    /// `AWS_ACCESS_KEY_ID` without `AWS_SECRET_ACCESS_KEY`, or the reverse.
    #[error("{present} is set but {missing} is not")]
    IncompleteEnvironment {
        /// The variable that is set.
        present: &'static str,
        /// The variable that is not.
        missing: &'static str,
    },
    /// Nothing found anywhere.
    #[error(
        "no AWS credentials for Amazon Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), AWS_PROFILE with keys in {}, or AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)",
        credentials_file.display()
    )]
    Missing {
        /// The credentials file that was looked at.
        credentials_file: PathBuf,
    },
}

/// One INI file: section name to its keys. Keys of nested blocks (an
/// indented line under `s3 =`) are skipped.
type Sections = HashMap<String, HashMap<String, String>>;

/// Parses the AWS shared-file INI dialect: `[section]`, `key = value`,
/// `#` and `;` comments, indented continuation lines of a nested block.
pub(crate) fn parse_ini(text: &str, file: &Path) -> Result<Sections, CredentialsError> {
    let mut sections: Sections = HashMap::new();
    let mut current: Option<String> = None;
    let bad = |line: usize, message: &str| CredentialsError::BadFile {
        file: file.to_path_buf(),
        line,
        message: message.to_string(),
    };
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if raw.starts_with([' ', '\t']) && current.is_some() {
            // A nested block's line (`  max_concurrent_requests = 20`).
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(name) = rest.split(']').next().filter(|_| rest.contains(']')) else {
                return Err(bad(line_no, "a section header without its closing `]`"));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(bad(line_no, "a section header with no name"));
            }
            sections.entry(name.to_string()).or_default();
            current = Some(name.to_string());
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(bad(line_no, "expected `key = value` or `[section]`"));
        };
        let Some(section) = &current else {
            return Err(bad(
                line_no,
                "a key before any `[section]` (profiles start with `[name]`)",
            ));
        };
        let key = key.trim().to_ascii_lowercase();
        if key.is_empty() {
            return Err(bad(line_no, "a `= value` with no key"));
        }
        sections
            .entry(section.clone())
            .or_default()
            .insert(key, value.trim().to_string());
    }
    Ok(sections)
}

/// Reads and parses one shared file; a missing file is empty.
fn read_ini(file: &Path) -> Result<Sections, CredentialsError> {
    match std::fs::read_to_string(file) {
        Ok(text) => parse_ini(&text, file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HashMap::new()),
        Err(e) => Err(CredentialsError::Unreadable {
            file: file.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// Where to look: the environment (a lookup function, so tests need not
/// change the process's) and the home directory.
pub(crate) struct Environment<'a> {
    pub(crate) var: &'a dyn Fn(&str) -> Option<String>,
    pub(crate) home: Option<PathBuf>,
}

impl Environment<'_> {
    fn get(&self, name: &str) -> Option<String> {
        (self.var)(name).filter(|v| !v.trim().is_empty())
    }

    fn profile(&self) -> String {
        self.get("AWS_PROFILE")
            .or_else(|| self.get("AWS_DEFAULT_PROFILE"))
            .unwrap_or_else(|| "default".into())
    }

    fn file(&self, variable: &str, name: &str) -> PathBuf {
        self.get(variable).map(PathBuf::from).unwrap_or_else(|| {
            self.home
                .clone()
                .unwrap_or_default()
                .join(".aws")
                .join(name)
        })
    }

    /// The shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
    /// `~/.aws/credentials`).
    pub(crate) fn credentials_file(&self) -> PathBuf {
        self.file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
    }

    /// The shared config file (`AWS_CONFIG_FILE`, else `~/.aws/config`).
    pub(crate) fn config_file(&self) -> PathBuf {
        self.file("AWS_CONFIG_FILE", "config")
    }

    /// The profile's section of the config file: `[profile NAME]`, or
    /// `[default]` for the default profile.
    fn config_section(&self) -> Result<HashMap<String, String>, CredentialsError> {
        let profile = self.profile();
        let mut config = read_ini(&self.config_file())?;
        let named = config.remove(&format!("profile {profile}"));
        Ok(named
            .or_else(|| {
                (profile == "default")
                    .then(|| config.remove("default"))
                    .flatten()
            })
            .unwrap_or_default())
    }

    /// The region: `AWS_REGION`, `AWS_DEFAULT_REGION`, the profile's
    /// `region` in the config file; `None` when none says.
    pub(crate) fn region(&self) -> Result<Option<String>, CredentialsError> {
        if let Some(r) = self
            .get("AWS_REGION")
            .or_else(|| self.get("AWS_DEFAULT_REGION"))
        {
            return Ok(Some(r.trim().to_string()));
        }
        Ok(self
            .config_section()?
            .remove("region")
            .filter(|r| !r.is_empty()))
    }

    /// The credentials: `AWS_BEARER_TOKEN_BEDROCK`, the access-key
    /// variables, then the profile's keys in the credentials file and then
    /// in the config file.
    pub(crate) fn auth(&self) -> Result<BedrockAuth, CredentialsError> {
        if let Some(token) = self.get("AWS_BEARER_TOKEN_BEDROCK") {
            return Ok(BedrockAuth::Bearer(token.trim().to_string()));
        }
        match (
            self.get("AWS_ACCESS_KEY_ID"),
            self.get("AWS_SECRET_ACCESS_KEY"),
        ) {
            (Some(id), Some(secret)) => {
                return Ok(BedrockAuth::Sigv4(AwsCredentials {
                    access_key_id: id.trim().to_string(),
                    secret_access_key: secret.trim().to_string(),
                    session_token: self.get("AWS_SESSION_TOKEN").map(|t| t.trim().to_string()),
                }));
            }
            (Some(_), None) => {
                return Err(CredentialsError::IncompleteEnvironment {
                    present: "AWS_ACCESS_KEY_ID",
                    missing: "AWS_SECRET_ACCESS_KEY",
                });
            }
            (None, Some(_)) => {
                return Err(CredentialsError::IncompleteEnvironment {
                    present: "AWS_SECRET_ACCESS_KEY",
                    missing: "AWS_ACCESS_KEY_ID",
                });
            }
            (None, None) => {}
        }
        let profile = self.profile();
        let credentials_file = self.credentials_file();
        let mut shared = read_ini(&credentials_file)?;
        if let Some(found) = keys_of(shared.remove(&profile), &profile, &credentials_file)? {
            return Ok(BedrockAuth::Sigv4(found));
        }
        if let Some(found) = keys_of(Some(self.config_section()?), &profile, &self.config_file())? {
            return Ok(BedrockAuth::Sigv4(found));
        }
        Err(CredentialsError::Missing { credentials_file })
    }
}

/// The keys of a profile's section, if it has them.
fn keys_of(
    section: Option<HashMap<String, String>>,
    profile: &str,
    file: &Path,
) -> Result<Option<AwsCredentials>, CredentialsError> {
    let Some(mut section) = section else {
        return Ok(None);
    };
    let mut take = |k: &str| section.remove(k).filter(|v| !v.is_empty());
    let incomplete = |present, missing| CredentialsError::Incomplete {
        profile: profile.to_string(),
        file: file.to_path_buf(),
        present,
        missing,
    };
    match (take("aws_access_key_id"), take("aws_secret_access_key")) {
        (Some(id), Some(secret)) => Ok(Some(AwsCredentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: take("aws_session_token"),
        })),
        (Some(_), None) => Err(incomplete("aws_access_key_id", "aws_secret_access_key")),
        (None, Some(_)) => Err(incomplete("aws_secret_access_key", "aws_access_key_id")),
        (None, None) => Ok(None),
    }
}

/// The process's environment and home directory.
pub(crate) fn process_env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The home directory (`HOME`, or `USERPROFILE` on Windows).
pub(crate) fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
}
