//! The capped output of one process: the first half of the cap and the last half, whatever
//! is produced in between.
//!
//! Owns the memory bound of a tool's output: [`CappedOutput`] never holds more than `cap`
//! bytes, however much is pushed (`yes` runs at full speed without growing memory). It does
//! no IO; the process runner pushes what it reads.

use std::collections::VecDeque;

/// A byte sink that keeps the first `cap / 2` bytes and the last `cap - cap / 2` bytes
/// pushed into it, counting everything it drops.
#[derive(Debug)]
pub(crate) struct CappedOutput {
    /// The first bytes, up to `head_cap`; filled before anything goes to `tail`.
    head: Vec<u8>,
    head_cap: usize,
    /// A ring of the latest bytes after the head, at most `tail_cap` of them.
    tail: VecDeque<u8>,
    tail_cap: usize,
    /// Bytes pushed in total, kept or not.
    total: u64,
}

/// The final text of a [`CappedOutput`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    /// The kept bytes as UTF-8 (invalid sequences replaced by U+FFFD), with a note in the
    /// middle where bytes were omitted.
    pub(crate) text: String,
    /// Whether bytes were omitted.
    pub(crate) truncated: bool,
}

impl CappedOutput {
    /// An empty buffer keeping at most `cap` bytes (plus, when cutting, a note).
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        let tail_cap = cap - head_cap;
        Self {
            head: Vec::with_capacity(head_cap.min(64 * 1024)),
            head_cap,
            tail: VecDeque::with_capacity(tail_cap.min(64 * 1024)),
            tail_cap,
            total: 0,
        }
    }

    /// Whether pushing `more` bytes would drop some, for the first time: until then the
    /// buffer holds everything pushed, see [`CappedOutput::everything`].
    pub(crate) fn first_overflow(&self, more: usize) -> bool {
        !self.truncated() && self.total + more as u64 > (self.head_cap + self.tail_cap) as u64
    }

    /// Whether bytes have been dropped from the middle.
    pub(crate) fn truncated(&self) -> bool {
        ((self.head.len() + self.tail.len()) as u64) < self.total
    }

    /// Everything pushed so far, in order, as long as nothing has been dropped (else a
    /// head and tail with a gap between them).
    pub(crate) fn everything(&self) -> [&[u8]; 3] {
        let (front, back) = self.tail.as_slices();
        [&self.head, front, back]
    }

    /// Appends `bytes`, dropping from the middle what no longer fits.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// The text: everything when nothing was dropped, else head, a note saying how much
    /// was omitted (and `whereabouts`: where the full output can be found), and tail. A
    /// character cut in two at either edge of the gap is dropped whole (and counted as
    /// omitted) instead of becoming U+FFFD.
    pub(crate) fn finish(self, whereabouts: Option<&str>) -> Captured {
        let (tail_front, tail_back) = self.tail.as_slices();
        let kept = (self.head.len() + self.tail.len()) as u64;
        if kept == self.total {
            let mut all = self.head;
            all.extend_from_slice(tail_front);
            all.extend_from_slice(tail_back);
            return Captured {
                text: String::from_utf8_lossy(&all).into_owned(),
                truncated: false,
            };
        }
        let head = &self.head[..complete_prefix_len(&self.head)];
        let mut tail = Vec::with_capacity(self.tail.len());
        tail.extend_from_slice(tail_front);
        tail.extend_from_slice(tail_back);
        let tail = &tail[continuation_prefix_len(&tail)..];
        let omitted = self.total - (head.len() + tail.len()) as u64;
        let whereabouts = whereabouts.map(|w| format!("; {w}")).unwrap_or_default();
        let text = format!(
            "{}\n[... {omitted} bytes omitted; output was {} bytes in total{whereabouts} ...]\n{}",
            String::from_utf8_lossy(head),
            self.total,
            String::from_utf8_lossy(tail),
        );
        Captured {
            text,
            truncated: true,
        }
    }
}

/// The length of `bytes` without a trailing, unfinished UTF-8 sequence (a lead byte
/// followed by fewer continuation bytes than it announces).
fn complete_prefix_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let byte = bytes[len - back];
        if is_continuation(byte) {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return len,
        };
        return if back < needed { len - back } else { len };
    }
    len
}

/// How many continuation bytes (at most 3) start `bytes`: the rest of a character whose
/// start was dropped.
fn continuation_prefix_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|byte| is_continuation(**byte))
        .count()
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn captured(cap: usize, pushes: &[&[u8]]) -> Captured {
        let mut output = CappedOutput::new(cap);
        for bytes in pushes {
            output.push(bytes);
        }
        output.finish(None)
    }

    fn whole(text: &str) -> Captured {
        Captured {
            text: text.to_owned(),
            truncated: false,
        }
    }

    fn cut(text: &str) -> Captured {
        Captured {
            text: text.to_owned(),
            truncated: true,
        }
    }

    #[test]
    fn output_under_the_cap_is_kept_whole() {
        assert_eq!(captured(10, &[b"abc", b"de"]), whole("abcde"));
    }

    #[test]
    fn output_exactly_at_the_cap_is_kept_whole() {
        assert_eq!(captured(10, &[b"abcdefghij"]), whole("abcdefghij"));
        assert_eq!(
            captured(10, &[b"ab", b"cdefg", b"hij"]),
            whole("abcdefghij")
        );
    }

    #[test]
    fn one_byte_over_the_cap_keeps_head_and_tail_with_a_note() {
        assert_eq!(
            captured(10, &[b"abcdefghijk"]),
            cut("abcde\n[... 1 bytes omitted; output was 11 bytes in total ...]\nghijk")
        );
    }

    #[test]
    fn many_small_pushes_keep_the_latest_bytes_in_the_tail() {
        let pushes: Vec<&[u8]> = b"0123456789abcdefghij".chunks(3).collect();
        assert_eq!(
            captured(8, &pushes),
            cut("0123\n[... 12 bytes omitted; output was 20 bytes in total ...]\nghij")
        );
    }

    #[test]
    fn a_push_larger_than_the_tail_replaces_it() {
        assert_eq!(
            captured(6, &[b"ab", b"cdefgh", b"0123456789"]),
            cut("abc\n[... 12 bytes omitted; output was 18 bytes in total ...]\n789")
        );
    }

    #[test]
    fn memory_stays_within_the_cap_however_much_is_pushed() {
        let mut output = CappedOutput::new(100);
        let chunk = [b'y'; 4096];
        for _ in 0..1000 {
            output.push(&chunk);
        }
        assert_eq!((output.head.len(), output.tail.len()), (50, 50));
        assert_eq!(output.total, 4_096_000);
    }

    #[test]
    fn characters_cut_at_the_gap_are_dropped_whole_not_replaced() {
        // "€" is 3 bytes, "é" 2: the head (4 bytes) ends inside the first "€", the tail
        // (4 bytes) starts inside the last "€".
        let text = "ab€€xyz€é";
        assert_eq!(text.len(), 16);
        assert_eq!(
            captured(8, &[text.as_bytes()]),
            cut("ab\n[... 12 bytes omitted; output was 16 bytes in total ...]\né")
        );
    }

    #[test]
    fn the_note_says_where_the_full_output_is() {
        let mut output = CappedOutput::new(4);
        output.push(b"abcdef");
        assert_eq!(
            output.finish(Some("all of it is in out.log")),
            cut(
                "ab\n[... 2 bytes omitted; output was 6 bytes in total; all of it is in out.log ...]\nef"
            )
        );
    }

    #[test]
    fn the_first_overflow_is_seen_once_and_everything_is_kept_until_then() {
        let mut output = CappedOutput::new(4);
        output.push(b"ab");
        assert!(!output.first_overflow(2));
        output.push(b"cd");
        assert_eq!(output.everything().concat(), b"abcd");
        assert!(output.first_overflow(1));
        output.push(b"e");
        assert!(!output.first_overflow(1));
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(captured(10, &[b"\xff\xfeok"]), whole("\u{FFFD}\u{FFFD}ok"));
    }

    #[test]
    fn a_zero_cap_keeps_only_the_note() {
        assert_eq!(
            captured(0, &[b"abc"]),
            cut("\n[... 3 bytes omitted; output was 3 bytes in total ...]\n")
        );
        assert_eq!(captured(0, &[]), whole(""));
    }
}
