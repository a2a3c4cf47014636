//! Where sign-in tokens live: one file per server in a folder only the user
//! can enter, each bound to the URL it was issued for.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The largest token file read (a token response is a few KiB).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// A token file or its folder that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("token store {}: {message}", path.display())]
pub struct TokenStoreError {
    /// The file or folder.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// The folder of sign-in tokens, one file per server.
///
/// - The folder is made `0700` and each file `0600`, written whole beside
///   the old one and renamed over it; a link in place of either is refused,
///   and so is a file or folder owned by another user.
/// - A file records the URL its tokens were issued for. A server whose URL
///   is different (a project's settings naming the same server elsewhere,
///   say) finds no token: a token never travels to another address.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let store = agent_mcp::oauth::TokenStore::new(dir.path().join("mcp-auth"));
/// assert!(!store.has_tokens("tracker", "https://mcp.example.com/mcp"));
/// assert!(!store.remove("tracker").unwrap());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    /// A store in `dir` (made when the first token is saved).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        TokenStore { dir: dir.into() }
    }

    /// The store of the stock agent: `mcp-auth/` in the agent directory
    /// (`~/.pi/agent`, or `PI_CODING_AGENT_DIR`).
    pub fn in_agent_dir() -> Option<Self> {
        coding_agent::agent_dir().map(|d| Self::new(d.join("mcp-auth")))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of one server's tokens.
    pub fn path_for(&self, server: &str) -> PathBuf {
        // Names come from settings: keep the file name plain whatever they hold.
        let mut name = String::with_capacity(server.len() + 5);
        for c in server.chars() {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                name.push(c);
            } else {
                name.push_str(&format!("%{:04x}", c as u32));
            }
        }
        if name.starts_with('.') {
            name.insert(0, '_');
        }
        self.dir.join(format!("{name}.json"))
    }

    /// Whether tokens for `server` at `url` are stored.
    pub fn has_tokens(&self, server: &str, url: &str) -> bool {
        matches!(self.load(server, url), Ok(Some(v)) if !v.get("token_response").is_none_or(Value::is_null))
    }

    /// Forgets `server`'s tokens; `false` when there were none.
    ///
    /// # Errors
    /// The file exists and cannot be removed.
    pub fn remove(&self, server: &str) -> Result<bool, TokenStoreError> {
        let path = self.path_for(server);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(error(&path, e)),
        }
    }

    /// The stored credentials of `server`, if they were issued for `url`.
    pub(crate) fn load(&self, server: &str, url: &str) -> Result<Option<Value>, TokenStoreError> {
        let path = self.path_for(server);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path);
        let mut file = match file {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(error(&path, e)),
        };
        let meta = file.metadata().map_err(|e| error(&path, e))?;
        if !meta.is_file() {
            return Err(error(&path, "is not a regular file"));
        }
        if meta.uid() != rustix::process::geteuid().as_raw() {
            return Err(error(&path, "is owned by another user; not used"));
        }
        let mut text = String::new();
        Read::by_ref(&mut file)
            .take(MAX_FILE_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| error(&path, e))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| error(&path, e))?;
        if value.get("url").and_then(Value::as_str) != Some(url) {
            tracing::debug!(
                server,
                "stored tokens were issued for another URL; not used"
            );
            return Ok(None);
        }
        Ok(value.get("credentials").cloned())
    }

    /// Stores `credentials` for `server` at `url`.
    pub(crate) fn save(
        &self,
        server: &str,
        url: &str,
        credentials: Value,
    ) -> Result<(), TokenStoreError> {
        self.ensure_dir()?;
        let path = self.path_for(server);
        let text = serde_json::to_string_pretty(&json!({
            "version": 1,
            "server": server,
            "url": url,
            "credentials": credentials,
        }))
        .map_err(|e| error(&path, e))?;
        let temp = self.dir.join(format!(
            ".{}.{}.{}",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("tokens"),
            std::process::id(),
            agent_ai::now_millis()
        ));
        // Whole, then renamed: a crash leaves the old tokens or the new ones.
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&temp)
            .and_then(|mut file| {
                file.write_all(text.as_bytes())?;
                file.sync_all()
            })
            .and_then(|()| std::fs::rename(&temp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(error(&path, e));
        }
        Ok(())
    }

    /// Clears `server`'s tokens but keeps nothing else either.
    pub(crate) fn clear(&self, server: &str) -> Result<(), TokenStoreError> {
        self.remove(server).map(|_| ())
    }

    /// A lock file beside the tokens, held while a refresh runs so two
    /// agents sharing the store do not both spend one refresh token.
    pub(crate) fn lock_path(&self, server: &str) -> PathBuf {
        let mut path = self.path_for(server).into_os_string();
        path.push(".lock");
        PathBuf::from(path)
    }

    /// Makes the folder `0700`, or checks the one that is there.
    pub(crate) fn ensure_dir(&self) -> Result<(), TokenStoreError> {
        let dir = &self.dir;
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(|e| error(dir, e))?;
                return Ok(());
            }
            Err(e) => return Err(error(dir, e)),
        }
        let meta = std::fs::symlink_metadata(dir).map_err(|e| error(dir, e))?;
        if !meta.is_dir() {
            return Err(error(dir, "is not a folder (a link is not followed)"));
        }
        if meta.uid() != rustix::process::geteuid().as_raw() {
            return Err(error(dir, "is owned by another user"));
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| error(dir, e))?;
        }
        Ok(())
    }
}

fn error(path: &Path, message: impl std::fmt::Display) -> TokenStoreError {
    TokenStoreError {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_private_and_bound_to_their_url() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("auth"));
        store
            .save(
                "tracker",
                "https://a.example/mcp",
                json!({"client_id": "c", "token_response": {"access_token": "t"}}),
            )
            .unwrap();
        assert!(store.has_tokens("tracker", "https://a.example/mcp"));
        // The same name at another address finds nothing.
        assert!(!store.has_tokens("tracker", "https://b.example/mcp"));
        let file = store.path_for("tracker");
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::metadata(store.dir()).unwrap().mode() & 0o777,
            0o700
        );
        assert!(store.remove("tracker").unwrap());
        assert!(!store.has_tokens("tracker", "https://a.example/mcp"));
    }

    #[test]
    fn a_link_in_place_of_the_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("auth"));
        store.ensure_dir().unwrap();
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(
            &elsewhere,
            r#"{"url":"https://a.example/mcp","credentials":{"token_response":{}}}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(&elsewhere, store.path_for("tracker")).unwrap();
        assert!(store.load("tracker", "https://a.example/mcp").is_err());
    }

    #[test]
    fn odd_server_names_stay_inside_the_folder() {
        let store = TokenStore::new("/x/auth");
        for name in ["../../etc/passwd", "a/b", ".hidden", "ü"] {
            let path = store.path_for(name);
            assert_eq!(path.parent(), Some(Path::new("/x/auth")), "{name}");
            assert!(!path.file_name().unwrap().to_str().unwrap().starts_with('.'));
        }
    }
}
