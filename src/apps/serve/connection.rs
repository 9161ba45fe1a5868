//! One client connection as the server drives it: [`ConnectionIo`], the socket with a deadline on
//! each exchange's writes and a lingering close, and [`Exchanges`], the service that arms that
//! deadline for each request and counts the requests in flight.
//!
//! The request timeout of the router ends a handler that takes too long, but the answer is sent
//! after it: a client that stops reading would hold its connection (and the answer's memory) for
//! as long as it likes. Here the whole exchange, from the request's headers to the answer's last
//! byte, has [`ServeLimits::request_timeout`]: a write that cannot go on past it ends the
//! connection with a reset.
//!
//! A server that closes a socket while its client is still sending makes the kernel answer with a
//! reset, and a client busy sending reads the reset rather than the 413 that was sent before it.
//! So a connection the server ends (after a 413, a 408) first says so (FIN), then reads and
//! drops what the client still sends, until it closes too or [`ServeLimits::linger`] passes.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::{HeaderValue, StatusCode, header};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::{Request, Response};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

use super::ServeLimits;

/// The most bytes a lingering close reads (and drops) from a client still sending.
const LINGER_BYTES: usize = 16 * 1024 * 1024;

/// When the exchange under way on a connection must be over: set by [`Exchanges`] for each
/// request, read by [`ConnectionIo`] when a write has to wait.
#[derive(Clone, Default)]
pub struct ExchangeDeadline(Arc<Mutex<Option<Instant>>>);

impl ExchangeDeadline {
    fn set(&self, at: Instant) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(at);
    }

    fn get(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The socket of one connection: reads as they come; a write that would wait past the exchange's
/// deadline fails (and the socket is reset on close); shutting down lingers.
pub struct ConnectionIo {
    stream: TcpStream,
    deadline: ExchangeDeadline,
    /// Wakes a write waiting on a full socket at the deadline.
    timer: Pin<Box<Sleep>>,
    timer_at: Option<Instant>,
    linger: Duration,
    lingering: Option<Lingering>,
}

/// A close under way: the write side is shut, what comes in is read and dropped.
struct Lingering {
    until: Pin<Box<Sleep>>,
    drained: usize,
}

impl ConnectionIo {
    pub fn new(stream: TcpStream, deadline: ExchangeDeadline, limits: &ServeLimits) -> ConnectionIo {
        ConnectionIo {
            stream,
            deadline,
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            timer_at: None,
            linger: limits.linger,
            lingering: None,
        }
    }

    /// A write had to wait: `Ready` with the error once the exchange's deadline has passed,
    /// `Pending` (woken at the deadline) before it.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let Some(at) = self.deadline.get() else {
            return Poll::Pending;
        };
        if self.timer_at != Some(at) {
            self.timer.as_mut().reset(at);
            self.timer_at = Some(at);
        }
        ready!(self.timer.as_mut().poll(cx));
        // What the kernel still holds for this client is dropped with the connection: a reset,
        // not the rest of an answer nobody reads.
        let _ = self.stream.set_zero_linger();
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client did not read the answer within the request timeout",
        ))
    }

    fn on_write(
        &mut self,
        cx: &mut Context<'_>,
        written: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match written {
            Poll::Pending => self.poll_deadline(cx).map(Err),
            ready => ready,
        }
    }
}

impl AsyncRead for ConnectionIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ConnectionIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.on_write(cx, written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.on_write(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    /// Shuts the write side (the client reads all that was sent, then the end), then reads and
    /// drops what the client still sends until it closes, [`LINGER_BYTES`] were read or the
    /// linger time passed: closing with unread bytes would reset the connection.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.lingering.is_none() {
            ready!(Pin::new(&mut this.stream).poll_shutdown(cx))?;
            this.lingering = Some(Lingering {
                until: Box::pin(tokio::time::sleep(this.linger)),
                drained: 0,
            });
        }
        // invariant: set just above when it was `None`
        let lingering = this.lingering.as_mut().expect("set above");
        let mut scratch = [0u8; 16 * 1024];
        loop {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.stream).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => {
                    lingering.drained += buf.filled().len();
                    if lingering.drained > LINGER_BYTES {
                        return Poll::Ready(Ok(()));
                    }
                }
                // The client closed (or broke) its side: nothing more will come.
                Poll::Ready(_) => return Poll::Ready(Ok(())),
                Poll::Pending => {
                    ready!(lingering.until.as_mut().poll(cx));
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

/// The requests being answered across every connection.
#[derive(Clone, Default)]
pub struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn enter(&self) -> InFlightGuard {
        self.0.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self.clone())
    }
}

/// One request in flight, until its answer's body has been sent (or dropped).
struct InFlightGuard(InFlight);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The router as one connection's hyper service: each request sets the connection's deadline and
/// counts as in flight until its answer was sent.
pub struct Exchanges {
    router: hyper_util::service::TowerToHyperService<Router>,
    deadline: ExchangeDeadline,
    timeout: Duration,
    in_flight: InFlight,
}

impl Exchanges {
    pub fn new(
        router: Router,
        deadline: ExchangeDeadline,
        limits: &ServeLimits,
        in_flight: InFlight,
    ) -> Exchanges {
        Exchanges {
            router: hyper_util::service::TowerToHyperService::new(router),
            deadline,
            timeout: limits.request_timeout,
            in_flight,
        }
    }
}

impl hyper::service::Service<Request<Incoming>> for Exchanges {
    type Response = Response<CountedBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<CountedBody>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        self.deadline.set(Instant::now() + self.timeout);
        let guard = self.in_flight.enter();
        let answer = self.router.call(request);
        Box::pin(async move {
            let mut response = answer.await?;
            // A 413 or a 408 leaves the request's body unread: the connection ends after the
            // answer, and says so, so that a client does not send its next request on it.
            let status = response.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE || status == StatusCode::REQUEST_TIMEOUT {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(response.map(|body| CountedBody { body, _guard: guard }))
        })
    }
}

/// An answer's body, holding its request's place among those in flight until it is dropped.
pub struct CountedBody {
    body: Body,
    _guard: InFlightGuard,
}

impl HttpBody for CountedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
