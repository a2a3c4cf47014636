//! AWS Signature Version 4 for one HTTP request (header signing only),
//! written from AWS's specification: canonical request, string to sign,
//! derived key, `Authorization` header. Checked against AWS's published
//! example and, in the integration tests, against botocore's signer.

use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use super::credentials::AwsCredentials;

const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: `new_from_slice` cannot fail here.
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

/// Percent-encodes everything but the unreserved characters
/// (`A-Z a-z 0-9 - _ . ~`), and `/` too when `keep_slash`: AWS's
/// `UriEncode`.
pub(crate) fn uri_encode(text: &str, keep_slash: bool) -> String {
    let set = if keep_slash { &PATH } else { &UNRESERVED_ONLY };
    percent_encoding::utf8_percent_encode(text, set).to_string()
}

/// Everything but SigV4's unreserved characters (`A-Za-z0-9-_.~`) is
/// escaped, in upper-case hex.
const UNRESERVED_ONLY: percent_encoding::AsciiSet = percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');
/// As [`UNRESERVED_ONLY`], with `/` kept (a path's separators).
const PATH: percent_encoding::AsciiSet = UNRESERVED_ONLY.remove(b'/');

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// `YYYYMMDDTHHMMSSZ` of a time (UTC), as `X-Amz-Date` takes it.
pub(crate) fn amz_date(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// What a request looks like to the signer.
pub(crate) struct SigningInput<'a> {
    pub(crate) method: &'a str,
    /// The path as sent (already percent-encoded), e.g. `/model/a%3Ab/converse-stream`.
    pub(crate) path: &'a str,
    /// The query as sent, without `?` (empty when none).
    pub(crate) query: &'a str,
    /// The `Host` header: host, and `:port` when not the scheme's default.
    pub(crate) host: &'a str,
    /// Headers to sign besides `host`, `x-amz-date` and
    /// `x-amz-security-token` (which the signer adds).
    pub(crate) headers: &'a [(String, String)],
    pub(crate) body: &'a [u8],
    pub(crate) region: &'a str,
    pub(crate) service: &'a str,
}

/// The canonical query string: each name and value encoded (after
/// decoding what the URL already encoded), sorted.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Signs a request at `time`: returns the headers to add (`x-amz-date`,
/// `x-amz-security-token` when the credentials have a session token, and
/// `authorization`).
///
/// The canonical URI is the sent path encoded once more, as AWS requires
/// for every service but S3 (`:` in a model id goes as `%3A` and is signed
/// as `%253A`).
pub(crate) fn sign(
    input: &SigningInput<'_>,
    credentials: &AwsCredentials,
    time: SystemTime,
) -> Vec<(String, String)> {
    let date_time = amz_date(time);
    let date = &date_time[..8];
    let mut added = vec![("x-amz-date".to_string(), date_time.clone())];
    if let Some(token) = &credentials.session_token {
        added.push(("x-amz-security-token".to_string(), token.clone()));
    }
    let mut headers: Vec<(String, String)> = input
        .headers
        .iter()
        .chain(&added)
        .map(|(k, v)| (k.to_ascii_lowercase(), normalize_value(v)))
        .filter(|(k, _)| k != "host" && k != "authorization")
        .collect();
    headers.push(("host".to_string(), input.host.to_string()));
    headers.sort();
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed_headers = headers
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let path = if input.path.is_empty() {
        "/"
    } else {
        input.path
    };
    let canonical_request = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        input.method.to_ascii_uppercase(),
        uri_encode(path, true),
        canonical_query(input.query),
        sha256_hex(input.body)
    );
    let scope = format!("{date}/{}/{}/aws4_request", input.region, input.service);
    let string_to_sign = format!(
        "{ALGORITHM}\n{date_time}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    tracing::trace!(%canonical_request, %string_to_sign, "SigV4");
    let key = [date, input.region, input.service, "aws4_request"]
        .iter()
        .fold(
            format!("AWS4{}", credentials.secret_access_key).into_bytes(),
            |key, part| hmac(&key, part.as_bytes()),
        );
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    added.push((
        "authorization".to_string(),
        format!(
            "{ALGORITHM} Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
            credentials.access_key_id
        ),
    ));
    added
}

/// A header value as signed: trimmed, runs of spaces made one.
fn normalize_value(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(amz_date(at(0)), "19700101T000000Z");
        // 2015-08-30T12:36:00Z, the date of AWS's examples.
        assert_eq!(amz_date(at(1_440_938_160)), "20150830T123600Z");
        // A leap day.
        assert_eq!(amz_date(at(1_709_208_000)), "20240229T120000Z");
    }

    #[test]
    fn uri_encoding_is_aws_uri_encode() {
        assert_eq!(uri_encode("a b/c:d~e", true), "a%20b/c%3Ad~e");
        assert_eq!(uri_encode("a/b", false), "a%2Fb");
        assert_eq!(uri_encode("%3A", true), "%253A");
        assert_eq!(canonical_query("b=2&a=x%20y"), "a=x%20y&b=2");
    }

    /// AWS's documented example ("Create a signed AWS API request", the
    /// IAM `ListUsers` GET; also the `get-vanilla-query-order-key-case`
    /// family of the SigV4 test suite), with its published signature.
    #[test]
    fn signs_the_aws_documented_example() {
        let credentials = AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let headers = vec![(
            "content-type".to_string(),
            "application/x-www-form-urlencoded; charset=utf-8".to_string(),
        )];
        let input = SigningInput {
            method: "GET",
            path: "/",
            query: "Action=ListUsers&Version=2010-05-08",
            host: "iam.amazonaws.com",
            headers: &headers,
            body: b"",
            region: "us-east-1",
            service: "iam",
        };
        let added = sign(&input, &credentials, at(1_440_938_160));
        let auth = &added.last().unwrap().1;
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
    }

    /// The SigV4 test suite's `get-vanilla` case (service `service`,
    /// region `us-east-1`), and its session-token variant's header.
    #[test]
    fn signs_the_test_suite_vanilla_get_and_adds_the_token() {
        let mut credentials = AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let input = SigningInput {
            method: "GET",
            path: "/",
            query: "",
            host: "example.amazonaws.com",
            headers: &[],
            body: b"",
            region: "us-east-1",
            service: "service",
        };
        let added = sign(&input, &credentials, at(1_440_938_160));
        assert_eq!(
            added.last().unwrap().1,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        credentials.session_token = Some("TOKEN".into());
        let added = sign(&input, &credentials, at(1_440_938_160));
        assert_eq!(added[1], ("x-amz-security-token".into(), "TOKEN".into()));
        assert!(
            added[2]
                .1
                .contains("SignedHeaders=host;x-amz-date;x-amz-security-token")
        );
    }
}
