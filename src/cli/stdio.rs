//! The process's stdin and stdout as the protocol front-ends (`daemon`, `acp`, `lsp`) read and
//! write them. A pipe, which is how editors spawn genai, is driven by the reactor directly;
//! anything else (a terminal, a file, a socket) goes through tokio's stdio, which does each
//! read and write on a blocking thread and so hands every frame between two threads.
//!
//! It owns only the choice; it must never read or write a frame itself.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

pub type Input = Box<dyn AsyncRead + Unpin + Send>;
pub type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// Standard input, for a front-end's reader.
pub fn stdin() -> Input {
    match pipe_end(std::io::stdin().as_fd()).and_then(pipe::Receiver::from_file) {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

/// Standard output, for a front-end's writer (it writes frames only).
pub fn stdout() -> Output {
    match pipe_end(std::io::stdout().as_fd()).and_then(pipe::Sender::from_file) {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    }
}

/// A copy of `fd` when it is a pipe (tokio then makes it non-blocking: the open pipe is
/// shared with no one but the process that spawned genai, which holds the other end).
fn pipe_end(fd: BorrowedFd<'_>) -> std::io::Result<File> {
    use std::os::unix::fs::FileTypeExt;
    let file = File::from(fd.try_clone_to_owned()?);
    if file.metadata()?.file_type().is_fifo() {
        Ok(file)
    } else {
        Err(std::io::Error::other("not a pipe"))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn a_pipe_is_driven_by_the_reactor_and_a_file_is_not() {
        let (reader, writer) = std::io::pipe().unwrap();
        let mut rx = pipe::Receiver::from_file(pipe_end(reader.as_fd()).unwrap()).unwrap();
        let mut tx = pipe::Sender::from_file(pipe_end(writer.as_fd()).unwrap()).unwrap();
        tx.write_all(b"{}\n").await.unwrap();
        let mut buf = [0u8; 3];
        rx.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"{}\n");

        let file = tempfile::tempfile().unwrap();
        assert!(pipe_end(file.as_fd()).is_err(), "a file is not a pipe");
    }
}
