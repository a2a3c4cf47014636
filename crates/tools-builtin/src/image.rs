//! Image detection by content and preparation for inline attachment.

use std::io::Cursor;

use base64::Engine;

/// Largest image file read into memory at all.
pub const MAX_IMAGE_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest encoded image sent inline.
pub const MAX_INLINE_BYTES: usize = 4_500_000;
/// Largest width or height sent inline.
pub const MAX_DIMENSION: u32 = 2000;

/// The image MIME type of `bytes` by magic number: png, jpeg, gif, webp, bmp.
///
/// ```
/// use tools_builtin::image::detect_image_mime;
/// assert_eq!(detect_image_mime(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
/// assert_eq!(detect_image_mime(b"hello"), None);
/// ```
pub fn detect_image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if bytes.len() >= 18
        && bytes.starts_with(b"BM")
        // The DIB header size is one of the known BMP header sizes.
        && matches!(u32::from_le_bytes([bytes[14], bytes[15], bytes[16], bytes[17]]), 12 | 40 | 52 | 56 | 64 | 108 | 124)
    {
        Some("image/bmp")
    } else {
        None
    }
}

/// What becomes of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageOutcome {
    /// Send it: base64 data, its MIME type and hint lines for the model.
    Inline {
        /// Base64 data.
        data: String,
        /// MIME type of `data`.
        mime: String,
        /// Lines added after `Read image file [...]`.
        hints: Vec<String>,
    },
    /// Do not send it; the message says why.
    Omitted(String),
}

/// Prepares an image for inline attachment: BMP is converted to PNG; with
/// `auto_resize`, images over 2000x2000 px or 4.5 MB are scaled down (PNG or
/// JPEG quality 80, whichever is smaller, shrinking further when needed).
pub fn process_image(bytes: Vec<u8>, mime: &str, auto_resize: bool) -> ImageOutcome {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let dims = image::ImageReader::new(Cursor::new(&bytes))
        .with_guessed_format()
        .ok()
        .and_then(|r| r.into_dimensions().ok());
    let too_big = dims.is_some_and(|(w, h)| w > MAX_DIMENSION || h > MAX_DIMENSION)
        || bytes.len() > MAX_INLINE_BYTES;
    let needs_convert = mime == "image/bmp";
    if !(needs_convert || auto_resize && too_big) {
        return ImageOutcome::Inline {
            data: b64(&bytes),
            mime: mime.to_string(),
            hints: Vec::new(),
        };
    }
    // A few hundred kilobytes of PNG can claim gigapixels: refuse to decode
    // past a bound instead of holding the whole canvas in memory.
    if let Some((w, h)) = dims
        && u64::from(w) * u64::from(h) > MAX_DECODE_PIXELS
    {
        return ImageOutcome::Omitted(format!(
            "[Image omitted: {w}x{h} pixels is too large to convert (limit {} megapixels).]",
            MAX_DECODE_PIXELS / 1_000_000
        ));
    }
    let decoded = match decode_bounded(&bytes) {
        Ok(img) => img,
        Err(e) => {
            tracing::debug!(error = %e, "image decode failed");
            return ImageOutcome::Omitted(
                "[Image omitted: could not be converted to a supported inline image format.]"
                    .to_string(),
            );
        }
    };
    let mut hints = Vec::new();
    if !(auto_resize && too_big) {
        let Some(png) = encode_png(&decoded) else {
            return ImageOutcome::Omitted(
                "[Image omitted: could not be converted to a supported inline image format.]"
                    .to_string(),
            );
        };
        hints.push(format!("[Image converted from {mime} to image/png.]"));
        return ImageOutcome::Inline {
            data: b64(&png),
            mime: "image/png".to_string(),
            hints,
        };
    }
    let (ow, oh) = (decoded.width(), decoded.height());
    let mut scale = (MAX_DIMENSION as f64 / ow.max(oh) as f64).min(1.0);
    for _ in 0..6 {
        let w = ((ow as f64 * scale).round() as u32).max(1);
        let h = ((oh as f64 * scale).round() as u32).max(1);
        let resized = decoded.resize(w, h, image::imageops::FilterType::Triangle);
        let png = encode_png(&resized);
        let jpeg = encode_jpeg(&resized);
        let best = match (png, jpeg) {
            (Some(p), Some(j)) if j.len() < p.len() => Some((j, "image/jpeg")),
            (Some(p), _) => Some((p, "image/png")),
            (None, Some(j)) => Some((j, "image/jpeg")),
            (None, None) => None,
        };
        if let Some((data, out_mime)) = best
            && data.len() <= MAX_INLINE_BYTES
        {
            hints.push(format!(
                "[Image: original {ow}x{oh}, displayed at {}x{}. Multiply coordinates by {:.2} to map to original image.]",
                resized.width(),
                resized.height(),
                ow as f64 / resized.width() as f64
            ));
            return ImageOutcome::Inline {
                data: b64(&data),
                mime: out_mime.to_string(),
                hints,
            };
        }
        scale *= 0.75;
    }
    ImageOutcome::Omitted(
        "[Image omitted: could not be resized below the inline image size limit.]".to_string(),
    )
}

/// Images with more pixels than this are not decoded (about 160 MB as RGBA).
const MAX_DECODE_PIXELS: u64 = 40_000_000;

/// Decodes with the image crate's allocation limit set to what
/// [`MAX_DECODE_PIXELS`] needs, whatever the header claimed.
fn decode_bounded(bytes: &[u8]) -> image::ImageResult<image::DynamicImage> {
    let mut reader = image::ImageReader::new(Cursor::new(bytes)).with_guessed_format()?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODE_PIXELS * 8);
    reader.limits(limits);
    reader.decode()
}

fn encode_png(img: &image::DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .ok()?;
    Some(out)
}

fn encode_jpeg(img: &image::DynamicImage) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let rgb = img.to_rgb8();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80);
    rgb.write_with_encoder(encoder).ok()?;
    Some(out)
}
