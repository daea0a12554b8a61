//! What a viewer's terminal says by itself: its answers to the program's
//! questions about it (where the cursor is, what terminal it is, its
//! colours, its keyboard mode) and its focus reports. They arrive among a
//! person's keystrokes but are not a person acting, so they never take a
//! session over; they reach the program only while nobody holds the
//! session or their viewer does (`SessionHost::typed`).
//!
//! Recognised whole within one batch of keystrokes (a terminal writes each
//! answer at once): `CSI r;c R` (cursor position), `CSI ? … c` and
//! `CSI > … c` (device attributes), `CSI ? … u` (keyboard flags),
//! `CSI ? … $ y` (mode reports), `CSI I` and `CSI O` (focus), `OSC 4/10/11/12;…`
//! (colours) and any DCS string (`ESC P … ESC \`: version and setting
//! reports), each ended by BEL or ST as sent. A key that writes the same
//! bytes as an answer (Ctrl-F3 as `CSI 1;5 R` in some terminals) is taken
//! for one: it reaches the program as an answer would, taking nothing.
//!
//! Not here: who holds a session (`session`).

/// `data` split into the terminal's own answers and what was typed, each
/// in order.
pub fn split(data: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut replies = Vec::new();
    let mut typed = Vec::new();
    let mut at = 0;
    while at < data.len() {
        match reply_at(&data[at..]) {
            Some(len) => {
                replies.extend_from_slice(&data[at..at + len]);
                at += len;
            }
            None => {
                typed.push(data[at]);
                at += 1;
            }
        }
    }
    (replies, typed)
}

/// The length of the terminal answer `data` starts with, if it does.
fn reply_at(data: &[u8]) -> Option<usize> {
    if data.first() != Some(&0x1b) {
        return None;
    }
    match data.get(1)? {
        b'[' => csi_reply(data),
        b']' => osc_reply(data),
        b'P' => string_end(data, 2),
        _ => None,
    }
}

/// A control sequence that only a terminal answers with.
fn csi_reply(data: &[u8]) -> Option<usize> {
    let body = &data[2..];
    let end = body.iter().position(|b| (0x40..=0x7e).contains(b))?;
    let (params, last) = (&body[..end], body[end]);
    let prefix = params.first().copied();
    let digits = |p: &[u8]| p.iter().all(|b| b.is_ascii_digit() || *b == b';');
    let reply = match last {
        b'R' => match prefix {
            Some(b'?') => digits(&params[1..]),
            _ => !params.is_empty() && digits(params) && params.contains(&b';'),
        },
        b'c' => matches!(prefix, Some(b'?' | b'>')) && digits(&params[1..]),
        b'u' => prefix == Some(b'?') && digits(&params[1..]),
        b'y' => {
            prefix == Some(b'?')
                && params.last() == Some(&b'$')
                && digits(&params[1..params.len() - 1])
        }
        b'I' | b'O' => params.is_empty(),
        _ => false,
    };
    reply.then_some(2 + end + 1)
}

/// A colour answer: `OSC 4;…`, `OSC 10;…`, `OSC 11;…`, `OSC 12;…`.
fn osc_reply(data: &[u8]) -> Option<usize> {
    let body = &data[2..];
    let colour = [&b"4;"[..], b"10;", b"11;", b"12;"]
        .iter()
        .any(|p| body.starts_with(p));
    if !colour {
        return None;
    }
    string_end(data, 2)
}

/// Where a string begun at `from` ends (BEL, or ESC \), past its end.
fn string_end(data: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at < data.len() {
        match data[at] {
            0x07 => return Some(at + 1),
            0x1b if data.get(at + 1) == Some(&b'\\') => return Some(at + 2),
            _ => at += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_terminals_answers_are_told_from_typing() {
        let answers: [&[u8]; 9] = [
            b"\x1b[12;40R",
            b"\x1b[?1;2c",
            b"\x1b[>41;354;0c",
            b"\x1b[?0u",
            b"\x1b[?2004;1$y",
            b"\x1b[I",
            b"\x1b]11;rgb:0000/0000/0000\x1b\\",
            b"\x1b]10;rgb:ffff/ffff/ffff\x07",
            b"\x1bP>|xterm(390)\x1b\\",
        ];
        for answer in answers {
            let mut data = b"ls".to_vec();
            data.extend_from_slice(answer);
            data.extend_from_slice(b"\r");
            assert_eq!(
                split(&data),
                (answer.to_vec(), b"ls\r".to_vec()),
                "{answer:?}"
            );
        }
    }

    #[test]
    fn keys_a_person_presses_are_typing() {
        let typed: [&[u8]; 8] = [
            b"\x1b[A",               // up
            b"\x1b[3~",              // delete
            b"\x1b[1;5C",            // ctrl-right
            b"\x1b",                 // escape alone
            b"\x1b[200~hi\x1b[201~", // a paste
            b"\x1b]52;c;aGk=\x07",   // a clipboard write is no answer
            b"\x1bOP",               // F1
            b"q",
        ];
        for keys in typed {
            assert_eq!(split(keys), (Vec::new(), keys.to_vec()), "{keys:?}");
        }
        // An unfinished answer is not one.
        assert_eq!(
            split(b"\x1b]11;rgb:00"),
            (Vec::new(), b"\x1b]11;rgb:00".to_vec())
        );
    }
}
