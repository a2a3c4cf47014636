//! `read` on real files.

use serde_json::json;
use test_support::tool_call::*;
use test_support::write;

#[tokio::test]
async fn reads_text_with_offsets_and_notices() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.txt", "one\ntwo\nthree\n");
    let out = call("read", dir.path(), json!({"path": "a.txt"})).await;
    assert!(!out.is_error);
    assert_eq!(out.text, "one\ntwo\nthree\n");
    assert!(out.result.details.is_null());

    let out = call(
        "read",
        dir.path(),
        json!({"path": "@a.txt", "offset": "2", "limit": 1}),
    )
    .await;
    assert_eq!(
        out.text,
        "two\n\n[1 more lines in file. Use offset=3 to continue.]"
    );

    let out = call("read", dir.path(), json!({"path": "a.txt", "offset": 9})).await;
    assert!(out.is_error);
    assert_eq!(out.text, "Offset 9 is beyond end of file (3 lines total)");
}

#[tokio::test]
async fn missing_directory_binary_and_special_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = call("read", dir.path(), json!({"path": "nope.txt"})).await;
    assert!(out.is_error);
    assert!(out.text.contains("nope.txt"), "{}", out.text);

    let out = call("read", dir.path(), json!({"path": "."})).await;
    assert!(out.is_error);
    assert!(out.text.starts_with("Path is a directory"), "{}", out.text);

    write(dir.path(), "bin.dat", b"\x00\x01\x02binary");
    let out = call("read", dir.path(), json!({"path": "bin.dat"})).await;
    assert!(out.is_error);
    assert!(
        out.text.starts_with("Cannot read binary file"),
        "{}",
        out.text
    );

    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        call("read", dir.path(), json!({"path": "fifo"})),
    )
    .await
    .expect("a FIFO must not block read");
    assert!(out.is_error);
    assert!(out.text.starts_with("Not a regular file"), "{}", out.text);

    let out = call("read", dir.path(), json!({"path": "/dev/zero"})).await;
    assert!(out.is_error);

    let out = call("read", dir.path(), json!({"path": "a.txt", "limit": -1})).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn images_are_detected_by_content() {
    let dir = tempfile::tempdir().unwrap();
    // A real 2x1 PNG.
    let mut png = Vec::new();
    {
        let img = image::RgbImage::from_pixel(2, 1, image::Rgb([255, 0, 0]));
        img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
    }
    write(dir.path(), "pic.txt", &png);
    write(dir.path(), "fake.png", "just text\n");
    let out = call("read", dir.path(), json!({"path": "pic.txt"})).await;
    assert!(!out.is_error);
    assert_eq!(out.text, "Read image file [image/png]");
    let blocks = serde_json::to_value(&out.result.content).unwrap();
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["mimeType"], "image/png");
    assert!(out.result.details.is_null());

    let out = call("read", dir.path(), json!({"path": "fake.png"})).await;
    assert_eq!(out.text, "just text\n");

    // BMP is converted to PNG.
    let mut bmp = Vec::new();
    image::RgbImage::from_pixel(3, 3, image::Rgb([0, 255, 0]))
        .write_to(&mut std::io::Cursor::new(&mut bmp), image::ImageFormat::Bmp)
        .unwrap();
    write(dir.path(), "p.bmp", &bmp);
    let out = call("read", dir.path(), json!({"path": "p.bmp"})).await;
    assert_eq!(
        out.text,
        "Read image file [image/png]\n[Image converted from image/bmp to image/png.]"
    );

    // Large images are scaled down, with the coordinate hint.
    let mut big = Vec::new();
    image::RgbImage::from_pixel(3000, 1500, image::Rgb([10, 20, 30]))
        .write_to(&mut std::io::Cursor::new(&mut big), image::ImageFormat::Png)
        .unwrap();
    write(dir.path(), "big.png", &big);
    let out = call("read", dir.path(), json!({"path": "big.png"})).await;
    assert!(
        out.text.contains("[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 to map to original image.]"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn large_file_is_streamed_with_truncation_details() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    write(dir.path(), "big.txt", &text);
    let out = call("read", dir.path(), json!({"path": "big.txt"})).await;
    assert!(
        out.text
            .ends_with("line 2000\n\n[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]")
    );
    assert_eq!(out.result.details["truncation"]["truncatedBy"], "lines");
    assert_eq!(out.result.details["truncation"]["outputLines"], 2000);
    let out = call(
        "read",
        dir.path(),
        json!({"path": "big.txt", "offset": 4999}),
    )
    .await;
    assert_eq!(out.text, "line 4999\nline 5000\n");
}

#[tokio::test]
async fn the_head_of_a_huge_file_costs_no_full_scan() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.log");
    // 200 text lines, then a 64 GiB hole (sparse: nothing on disk). A hole
    // reads as zeros, which hold no newline: counting the file's lines would
    // mean reading all 64 GiB.
    let head: String = (1..=200)
        .map(|i| format!("line {i:04} {}\n", "x".repeat(30)))
        .collect();
    std::fs::write(&path, &head).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(64 * 1024 * 1024 * 1024).unwrap();
    drop(f);
    let out = call("read", dir.path(), json!({"path": "huge.log", "limit": 2})).await;
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.starts_with("line 0001"),
        "{}",
        &out.text[..80.min(out.text.len())]
    );
    assert!(
        out.text
            .ends_with("(the rest was not counted). Use offset=3 to continue.]"),
        "{}",
        out.text
    );
    let out = call(
        "read",
        dir.path(),
        json!({"path": "huge.log", "offset": 100, "limit": 1}),
    )
    .await;
    assert!(out.text.starts_with("line 0100"), "{}", out.text);
    assert!(
        out.text.ends_with("Use offset=101 to continue.]"),
        "{}",
        out.text
    );
}

/// A small PNG that claims 16000x16000 pixels is not decoded (it would
/// take hundreds of megabytes): the read says why the image is left out.
#[tokio::test]
async fn a_decompression_bomb_is_not_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import struct, sys, zlib
w = h = 16000
row = b'\x00' * (w + 1)
c = zlib.compressobj(9)
data = b''.join([c.compress(row) for _ in range(h)] + [c.flush()])
chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
open(sys.argv[1], 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)) + chunk(b'IDAT', data) + chunk(b'IEND', b''))
"#;
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(dir.path().join("bomb.png"))
        .status()
        .expect("python3");
    assert!(status.success());
    assert!(
        std::fs::metadata(dir.path().join("bomb.png"))
            .unwrap()
            .len()
            < 1 << 20
    );
    let out = call("read", dir.path(), json!({"path": "bomb.png"})).await;
    assert!(out.text.contains("16000x16000"), "{}", out.text);
    assert!(out.text.contains("too large"), "{}", out.text);
}
