//! Where sign-in tokens live: one file per server and URL in a folder only
//! the user can enter.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
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

/// The folder of sign-in tokens, one file per server name and URL.
///
/// - The folder is made `0700` and each file `0600`. The folder is opened
///   once per operation without following a link, checked to be the
///   user's own, and every file is reached relative to that handle; a file
///   is written whole beside the old one and renamed over it.
/// - A file's name holds the server's name and a hash of its URL, and the
///   file records the URL: a server of the same name at another address (a
///   project's settings naming it elsewhere, say) neither finds nor
///   replaces the tokens, and a token never travels to another address.
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

// Saving, clearing and locking are for sign-ins, which only the `http`
// feature does.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
impl TokenStore {
    /// A store in `dir` (made when the first token is saved).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        TokenStore { dir: dir.into() }
    }

    /// The store of the stock agent: `mcp-auth/` in the agent directory.
    pub fn in_agent_dir() -> Option<Self> {
        coding_agent::agent_dir().map(|d| Self::new(d.join("mcp-auth")))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the tokens of `server` at `url`.
    pub fn path_for(&self, server: &str, url: &str) -> PathBuf {
        self.dir.join(file_name(server, url))
    }

    /// Whether tokens for `server` at `url` are stored.
    pub fn has_tokens(&self, server: &str, url: &str) -> bool {
        matches!(self.load(server, url), Ok(Some(v)) if !v.get("token_response").is_none_or(Value::is_null))
    }

    /// Forgets every token stored for `server`, whatever its URL; `false`
    /// when there were none.
    ///
    /// # Errors
    /// The folder cannot be used or a file cannot be removed.
    pub fn remove(&self, server: &str) -> Result<bool, TokenStoreError> {
        let Some(dir) = self.open_dir(false)? else {
            return Ok(false);
        };
        let prefix = format!("{}-", escape(server));
        let mut removed = false;
        let entries = std::fs::read_dir(&self.dir).map_err(|e| error(&self.dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(hash) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".json"))
            else {
                continue;
            };
            if hash.len() != 16 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            // Relative to the folder we checked, never through a path.
            rustix::fs::unlinkat(&dir, name, AtFlags::empty())
                .map_err(|e| error(&self.dir.join(name), e))?;
            removed = true;
        }
        Ok(removed)
    }

    /// The stored credentials of `server` at `url`.
    pub(crate) fn load(&self, server: &str, url: &str) -> Result<Option<Value>, TokenStoreError> {
        let path = self.path_for(server, url);
        let Some(dir) = self.open_dir(false)? else {
            return Ok(None);
        };
        let opened = rustix::fs::openat(
            &dir,
            file_name(server, url).as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        );
        let fd = match opened {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(error(&path, e)),
        };
        let mut file = std::fs::File::from(fd);
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
        let path = self.path_for(server, url);
        let dir = self
            .open_dir(true)?
            .ok_or_else(|| error(&self.dir, "could not be made"))?;
        let text = serde_json::to_string_pretty(&json!({
            "version": 1,
            "server": server,
            "url": url,
            "credentials": credentials,
        }))
        .map_err(|e| error(&path, e))?;
        let name = file_name(server, url);
        let temp = format!(".{name}.{}.{}", std::process::id(), agent_ai::now_millis());
        // Whole, then renamed: a crash leaves the old tokens or the new ones.
        let written = rustix::fs::openat(
            &dir,
            temp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(std::io::Error::from)
        .and_then(|fd| {
            let mut file = std::fs::File::from(fd);
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| {
            rustix::fs::renameat(&dir, temp.as_str(), &dir, name.as_str())
                .map_err(std::io::Error::from)
        });
        if let Err(e) = written {
            let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
            return Err(error(&path, e));
        }
        Ok(())
    }

    /// Clears the tokens of `server` at `url`.
    pub(crate) fn clear(&self, server: &str, url: &str) -> Result<(), TokenStoreError> {
        let Some(dir) = self.open_dir(false)? else {
            return Ok(());
        };
        match rustix::fs::unlinkat(&dir, file_name(server, url).as_str(), AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(error(&self.path_for(server, url), e)),
        }
    }

    /// Opens (and locks) the lock file beside the tokens of `server` at
    /// `url`, held while a refresh runs so two agents sharing the store do
    /// not both spend one refresh token. Blocks until the lock is free.
    pub(crate) fn lock(&self, server: &str, url: &str) -> Result<std::fs::File, TokenStoreError> {
        let name = format!("{}.lock", file_name(server, url));
        let dir = self
            .open_dir(true)?
            .ok_or_else(|| error(&self.dir, "could not be made"))?;
        let fd = rustix::fs::openat(
            &dir,
            name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| error(&self.dir.join(&name), e))?;
        rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| error(&self.dir.join(&name), e))?;
        Ok(std::fs::File::from(fd))
    }

    /// The folder, opened without following a link and checked to be the
    /// user's own (`0700`); made first when `create`. `None` when it does
    /// not exist and `create` is false.
    fn open_dir(&self, create: bool) -> Result<Option<OwnedFd>, TokenStoreError> {
        let dir = &self.dir;
        if create {
            match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(dir)
                        .map_err(|e| error(dir, e))?;
                }
                Err(e) => return Err(error(dir, e)),
            }
        }
        let fd = match rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) if !create => return Ok(None),
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                return Err(error(dir, "is not a folder (a link is not followed)"));
            }
            Err(e) => return Err(error(dir, e)),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| error(dir, e))?;
        if stat.st_uid != rustix::process::geteuid().as_raw() {
            return Err(error(dir, "is owned by another user; not used"));
        }
        if stat.st_mode & 0o077 != 0 {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700)).map_err(|e| error(dir, e))?;
        }
        Ok(Some(fd))
    }

    /// Checks (or makes) the folder.
    pub(crate) fn ensure_dir(&self) -> Result<(), TokenStoreError> {
        self.open_dir(true).map(|_| ())
    }
}

/// `NAME-HASH.json`: the name kept plain whatever it holds (one fixed-width
/// escape per character outside `[A-Za-z0-9_.-]`, so two names never share
/// a file), and a hash of the URL.
fn file_name(server: &str, url: &str) -> String {
    format!("{}-{:016x}.json", escape(server), fnv1a(url.as_bytes()))
}

fn escape(server: &str) -> String {
    let mut name = String::with_capacity(server.len() + 8);
    for c in server.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' || (c == '.' && !name.is_empty()) {
            name.push(c);
        } else {
            name.push_str(&format!("%{:06x}", c as u32));
        }
    }
    name
}

/// FNV-1a, 64 bits: a stable hash (the standard library's is not promised
/// to stay the same between releases, and file names must).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
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
    use std::os::unix::fs::PermissionsExt;

    const A: &str = "https://a.example/mcp";

    fn token() -> Value {
        json!({"client_id": "c", "token_response": {"access_token": "t"}})
    }

    #[test]
    fn tokens_are_private_and_bound_to_their_url() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("auth"));
        store.save("tracker", A, token()).unwrap();
        assert!(store.has_tokens("tracker", A));
        // The same name at another address finds nothing, and signing in
        // there leaves the first tokens alone.
        assert!(!store.has_tokens("tracker", "https://b.example/mcp"));
        store
            .save("tracker", "https://b.example/mcp", token())
            .unwrap();
        assert!(store.has_tokens("tracker", A));
        let file = store.path_for("tracker", A);
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::metadata(store.dir()).unwrap().mode() & 0o777,
            0o700
        );
        assert!(store.remove("tracker").unwrap());
        assert!(!store.has_tokens("tracker", A));
        assert!(!store.has_tokens("tracker", "https://b.example/mcp"));
    }

    #[test]
    fn a_link_in_place_of_the_file_or_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("auth"));
        store.ensure_dir().unwrap();
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(
            &elsewhere,
            json!({"url": A, "credentials": token()}).to_string(),
        )
        .unwrap();
        std::os::unix::fs::symlink(&elsewhere, store.path_for("tracker", A)).unwrap();
        assert!(store.load("tracker", A).is_err());

        // A folder that is a link: nothing is read, written or removed through it.
        let victim = dir.path().join("victim");
        let real = TokenStore::new(&victim);
        real.save("tracker", A, token()).unwrap();
        let linked = TokenStore::new(dir.path().join("linked"));
        std::os::unix::fs::symlink(&victim, linked.dir()).unwrap();
        assert!(linked.load("tracker", A).is_err());
        assert!(linked.remove("tracker").is_err());
        assert!(linked.save("tracker", A, token()).is_err());
        assert!(real.has_tokens("tracker", A));
    }

    #[test]
    fn a_folder_open_to_others_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("auth"));
        std::fs::create_dir(store.dir()).unwrap();
        std::fs::set_permissions(store.dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
        store.save("tracker", A, token()).unwrap();
        assert_eq!(
            std::fs::metadata(store.dir()).unwrap().mode() & 0o777,
            0o700
        );
    }

    #[test]
    fn odd_server_names_stay_inside_the_folder_and_apart() {
        let store = TokenStore::new("/x/auth");
        for name in ["../../etc/passwd", "a/b", ".hidden", "ü", "😀", "ὠ0"] {
            let path = store.path_for(name, A);
            assert_eq!(path.parent(), Some(Path::new("/x/auth")), "{name}");
            assert!(!path.file_name().unwrap().to_str().unwrap().starts_with('.'));
        }
        assert_ne!(store.path_for("😀", A), store.path_for("ὠ0", A));
    }
}
