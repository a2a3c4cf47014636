//! Command lines in: `\n`-terminated, lossy UTF-8, bounded length.

use super::*;

/// The longest command line accepted (images come base64-encoded).
pub(super) const MAX_LINE: usize = 64 << 20;
/// One line of commands.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum CommandLine {
    /// The line without its `\n`, invalid UTF-8 replaced (as Pi's readline
    /// reads it).
    Text(String),
    /// A line longer than the limit, skipped up to its end.
    TooLong,
}

/// `\n`-terminated lines of at most a given length (the last one may lack
/// its `\n`). Not `LinesCodec`: it turns invalid UTF-8 into an error and
/// drops the line, where Pi reads it lossily. An over-long line is an item,
/// not an error, because `FramedRead` answers a decoder error with one
/// `None` and, polled again, waits for more input before it decodes the
/// lines it already holds: a command sent with an over-long line would wait
/// for the next one.
pub(super) struct CommandLines(AnyDelimiterCodec);

impl CommandLines {
    pub(super) fn new(max: usize) -> Self {
        CommandLines(AnyDelimiterCodec::new_with_max_length(
            b"\n".to_vec(),
            b"\n".to_vec(),
            max,
        ))
    }

    fn item(
        line: Result<Option<Bytes>, AnyDelimiterCodecError>,
    ) -> std::io::Result<Option<CommandLine>> {
        match line {
            Ok(line) => {
                Ok(line.map(|l| CommandLine::Text(String::from_utf8_lossy(&l).into_owned())))
            }
            Err(AnyDelimiterCodecError::MaxChunkLengthExceeded) => Ok(Some(CommandLine::TooLong)),
            Err(AnyDelimiterCodecError::Io(e)) => Err(e),
        }
    }
}

impl Decoder for CommandLines {
    type Item = CommandLine;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<CommandLine>> {
        Self::item(self.0.decode(buf))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<CommandLine>> {
        Self::item(self.0.decode_eof(buf))
    }
}
