//! Showing a person the authorization URL, or following it without one.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

/// Why a prompt could not show or follow the authorization URL: any error
/// of the prompt's own, so an implementation can use `?` on what it calls.
pub type PromptError = Box<dyn std::error::Error + Send + Sync>;

/// Takes the authorization URL of a sign-in to the authorization server:
/// a browser for a person, or a program that follows it itself. The
/// sign-in then waits for the redirect on its loopback listener.
pub trait AuthorizationPrompt: Send + Sync {
    /// Opens `url`; an error ends the sign-in.
    fn open<'a>(&'a self, server: &'a str, url: &'a str) -> BoxFuture<'a, Result<(), PromptError>>;
}

/// A shared [`AuthorizationPrompt`], as a server's configuration holds it.
#[derive(Clone)]
pub struct AuthPrompt(pub Arc<dyn AuthorizationPrompt>);

impl AuthPrompt {
    /// Wraps a prompt.
    pub fn new(prompt: impl AuthorizationPrompt + 'static) -> Self {
        AuthPrompt(Arc::new(prompt))
    }
}

impl std::fmt::Debug for AuthPrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthPrompt")
    }
}

impl PartialEq for AuthPrompt {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for AuthPrompt {}

/// For a person: prints the URL on stderr and, where there is a display,
/// opens it in the browser (`$BROWSER`, else `xdg-open` or `open`).
/// Without a display (an SSH session, a container) the printed URL is
/// opened by hand on any machine whose browser can reach the redirect
/// (a forwarded port, for instance).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct BrowserPrompt {
    /// Only print the URL, never start a browser.
    pub no_browser: bool,
}

impl AuthorizationPrompt for BrowserPrompt {
    fn open<'a>(&'a self, server: &'a str, url: &'a str) -> BoxFuture<'a, Result<(), PromptError>> {
        async move {
            eprintln!(
                "To sign in to MCP server {server}, open this address in a browser:\n\n  {url}\n"
            );
            if self.no_browser {
                return Ok(());
            }
            if let Err(e) = open_in_browser(url) {
                eprintln!("({e}; open the address by hand)");
            }
            Ok(())
        }
        .boxed()
    }
}

/// Opens `url` in the browser: `$BROWSER`, else `xdg-open` (or `open` on
/// macOS) where there is a display. `Ok(false)` when there is neither, so
/// the caller shows the address instead; the URL is one argument, never a
/// shell word.
pub fn open_in_browser(url: &str) -> Result<bool, String> {
    let has_display = std::env::var_os("DISPLAY").is_some()
        || std::env::var_os("WAYLAND_DISPLAY").is_some()
        || cfg!(target_os = "macos");
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let program = match browser {
        Some(b) => b,
        None if !has_display => return Ok(false),
        None if cfg!(target_os = "macos") => "open".to_string(),
        None => "xdg-open".to_string(),
    };
    let mut child = std::process::Command::new(&program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start {program}: {e}"))?;
    // Reaped off the async thread; its outcome changes nothing.
    std::thread::spawn(move || child.wait());
    Ok(true)
}

/// Follows the authorization URL itself, as a browser would that is
/// already signed in and consents at once: for authorization servers that
/// redirect without asking a person (test servers, the MCP conformance
/// suite, machine accounts), and for tests. Redirects are followed only to
/// `http`/`https` addresses, at most ten.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct HeadlessPrompt;

#[cfg(feature = "http")]
impl AuthorizationPrompt for HeadlessPrompt {
    fn open<'a>(
        &'a self,
        _server: &'a str,
        url: &'a str,
    ) -> BoxFuture<'a, Result<(), PromptError>> {
        async move {
            agent_ai::providers::install_tls_provider();
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::limited(10))
                .timeout(std::time::Duration::from_secs(30))
                .build()?;
            // The last hop is our own listener, which answers and closes.
            client.get(url).send().await?;
            Ok(())
        }
        .boxed()
    }
}
