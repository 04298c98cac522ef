//! Tests of framing: detection, recovery from bad headers and wrong lengths, oversized frames,
//! and partial frames.

use super::*;

fn frames(input: &[u8]) -> (Vec<Frame>, Option<Framing>) {
    let mut c = FrameCodec::default();
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    while let Some(f) = c.decode(&mut buf).unwrap() {
        out.push(f);
    }
    while let Some(f) = c.decode_eof(&mut buf).unwrap() {
        out.push(f);
    }
    (out, c.framing.get())
}

#[test]
fn detects_lines() {
    let (f, k) = frames(b"\n{\"a\":1}\n\n{\"b\":2}");
    assert_eq!(k, Some(Framing::Lines));
    assert_eq!(
        f,
        vec![
            Frame::Message(Bytes::from_static(b"{\"a\":1}")),
            Frame::Message(Bytes::from_static(b"{\"b\":2}"))
        ]
    );
}

#[test]
fn detects_content_length_and_recovers_from_bad_headers() {
    let (f, k) = frames(b"Content-Length: 7\r\n\r\n{\"a\":1}X-Bad: 1\r\n\r\ncontent-length: 2\r\nContent-Type: x\r\n\r\n{}");
    assert_eq!(k, Some(Framing::ContentLength));
    assert_eq!(f.len(), 3);
    assert_eq!(f[0], Frame::Message(Bytes::from_static(b"{\"a\":1}")));
    assert!(matches!(f[1], Frame::Malformed(_)));
    assert_eq!(f[2], Frame::Message(Bytes::from_static(b"{}")));
}

#[test]
fn an_oversized_frame_is_one_error_and_its_body_is_skipped() {
    let mut c = FrameCodec::default();
    let big = MAX_FRAME + 10;
    let mut buf = BytesMut::from(format!("Content-Length: {big}\r\n\r\n").as_bytes());
    assert!(matches!(
        c.decode(&mut buf).unwrap(),
        Some(Frame::Malformed(_))
    ));
    let mut left = big;
    while left > 0 {
        let n = left.min(1 << 20);
        buf.put_slice(&vec![b'x'; n]);
        left -= n;
        assert_eq!(c.decode(&mut buf).unwrap(), None);
    }
    assert!(buf.is_empty());
    buf.clear();
    buf.put_slice(b"Content-Length: 2\r\n\r\n{}");
    assert_eq!(
        c.decode(&mut buf).unwrap(),
        Some(Frame::Message(Bytes::from_static(b"{}")))
    );
}

fn framed(length: usize, body: &str) -> String {
    format!("Content-Length: {length}\r\n\r\n{body}")
}

fn messages(frames: &[Frame]) -> Vec<&[u8]> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Message(b) => Some(&b[..]),
            Frame::Malformed(_) => None,
        })
        .collect()
}

#[test]
fn a_length_too_short_loses_only_its_own_frame() {
    // Characters counted instead of UTF-8 bytes: `é` is two bytes.
    let bad = r#"{"id":1,"text":"café"}"#;
    let good = r#"{"id":2}"#;
    let input =
        framed(bad.chars().count(), bad) + &framed(good.len(), good) + &framed(good.len(), good);
    let (f, _) = frames(input.as_bytes());
    assert_eq!(
        messages(&f)[1..],
        [good.as_bytes(), good.as_bytes()],
        "{f:?}"
    );
    // One byte short, with LSP's Content-Type before the next length.
    let next = format!(
        "Content-Type: application/vscode-jsonrpc\r\n{}",
        framed(good.len(), good)
    );
    let (f, _) = frames((framed(bad.len() - 1, bad) + &next).as_bytes());
    assert_eq!(messages(&f).last(), Some(&good.as_bytes()), "{f:?}");
    assert!(matches!(f[1], Frame::Malformed(_)), "{f:?}");
}

#[test]
fn a_length_too_long_is_cut_at_the_next_header() {
    let good = r#"{"id":2}"#;
    let input = framed(40, r#"{"id":1}"#) + &framed(good.len(), good);
    let mut c = FrameCodec::default();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    // Byte by byte, as a slow pipe would bring it.
    for b in input.as_bytes() {
        buf.put_u8(*b);
        while let Some(f) = c.decode(&mut buf).unwrap() {
            out.push(f);
        }
    }
    assert!(matches!(out[0], Frame::Malformed(_)), "{out:?}");
    assert_eq!(messages(&out), [good.as_bytes()], "{out:?}");
    // A few bytes too long: the next header starts inside the body and runs past it.
    for over in 1..30 {
        let first = r#"{"id":1}"#;
        let input = framed(first.len() + over, first) + &framed(good.len(), good);
        let (f, _) = frames(input.as_bytes());
        assert_eq!(messages(&f), [good.as_bytes()], "{over} too long: {f:?}");
    }
    // A body that mentions the header in a string is not cut.
    let text = r#"{"text":"Content-Length: 5"}"#;
    let (f, _) = frames(framed(text.len(), text).as_bytes());
    assert_eq!(messages(&f), [text.as_bytes()]);
}

#[test]
fn lines_as_read_keep_their_bytes_and_never_switch_framing() {
    let input = b"  {\"a\":1} \r\n\t\n\nnot json\nContent-Length: 2\r\n\r\n{}\n[1]";
    let whole = {
        let mut c = FrameCodec::lines_as_read();
        let mut buf = BytesMut::from(&input[..]);
        let mut out = Vec::new();
        while let Some(f) = c.decode_eof(&mut buf).unwrap() {
            out.push(f);
        }
        out
    };
    let expected: Vec<&[u8]> = vec![
        b"  {\"a\":1} \r\n",
        b"not json\n",
        b"Content-Length: 2\r\n",
        b"{}\n",
        b"[1]",
    ];
    assert_eq!(messages(&whole), expected);
    // Byte by byte, as a slow pipe brings them: the same lines.
    let mut c = FrameCodec::lines_as_read();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for b in input {
        buf.put_u8(*b);
        while let Some(f) = c.decode(&mut buf).unwrap() {
            out.push(f);
        }
    }
    while let Some(f) = c.decode_eof(&mut buf).unwrap() {
        out.push(f);
    }
    assert_eq!(out, whole);
    assert_eq!(c.framing.get(), Some(Framing::Lines));
}

#[test]
fn partial_frames_wait_for_more() {
    let mut c = FrameCodec::default();
    let mut buf = BytesMut::from(&b"Content-Length: 4\r\n\r\n{}"[..]);
    assert_eq!(c.decode(&mut buf).unwrap(), None);
    buf.put_slice(b"  ");
    assert_eq!(
        c.decode(&mut buf).unwrap(),
        Some(Frame::Message(Bytes::from_static(b"{}  ")))
    );
    let mut out = BytesMut::new();
    c.encode(Bytes::from_static(b"{}"), &mut out).unwrap();
    assert_eq!(&out[..], b"Content-Length: 2\r\n\r\n{}");
}
