package gateway

import (
	"context"
	"net/http"

	"google.golang.org/grpc/status"
)

// streamResponse is the response writer every routed request gets, so that
// a failed server stream (a report export) can be answered like any other
// failed call. grpc-gateway does not send stream errors through the error
// handler: it writes {"error": <google.rpc.Status>} itself, as
// application/json with the headers the stream had set, and appends it to
// the file when the failure comes after the first chunk. streamError
// renders the problem document instead and this writer then drops what
// grpc-gateway writes after it.
type streamResponse struct {
	http.ResponseWriter
	r *http.Request
	// wrote is set once a status or a byte has gone to the client: from
	// then on the response can no longer become a problem document.
	wrote bool
	// done is set once the problem document is written.
	done    bool
	discard http.Header
}

type streamKey struct{}

func (s *streamResponse) Header() http.Header {
	if s.done {
		if s.discard == nil {
			s.discard = http.Header{}
		}
		return s.discard
	}
	return s.ResponseWriter.Header()
}

func (s *streamResponse) WriteHeader(code int) {
	if s.done {
		return
	}
	s.wrote = true
	s.ResponseWriter.WriteHeader(code)
}

func (s *streamResponse) Write(b []byte) (int, error) {
	if s.done {
		return len(b), nil
	}
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (the
// stream flushes every chunk).
func (s *streamResponse) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// withStreamResponse wraps w for streamError and notes it in the request.
func withStreamResponse(w http.ResponseWriter, r *http.Request) (*streamResponse, *http.Request) {
	s := &streamResponse{ResponseWriter: w}
	s.r = r.WithContext(context.WithValue(r.Context(), streamKey{}, s))
	return s, s.r
}

// streamError is grpc-gateway's stream error handler. Before the first
// byte it writes the problem document exactly as handleError does for a
// unary call (status, application/problem+json, traceId, nothing
// internal), dropping the file's Content-Disposition. After the first byte
// the status is already 200 and the client holds part of a file: the only
// honest signal left is to abort the connection, so the download fails
// instead of ending as a well-formed but truncated file.
func (g *Gateway) streamError(ctx context.Context, err error) *status.Status {
	st := status.Convert(err)
	s, ok := ctx.Value(streamKey{}).(*streamResponse)
	if !ok || s.done {
		return st
	}
	if s.wrote {
		g.logger.ErrorContext(ctx, "stream failed after its first byte; connection aborted", "method", s.r.Method, "path", s.r.URL.Path,
			"code", st.Code().String(), "error", st.Message())
		panic(http.ErrAbortHandler)
	}
	h := s.ResponseWriter.Header()
	h.Del("Content-Disposition")
	h.Del("Transfer-Encoding")
	g.handleError(ctx, g.mux, codec{}, s.ResponseWriter, s.r, err)
	s.done = true
	return st
}
