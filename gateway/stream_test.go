package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/almoner/almoner/pkg/problem"
)

// forwardStream runs grpc-gateway's stream forwarding, as a generated
// export route does, over the chunks and then fails with err. It returns
// the recorded response and whether the handler aborted the connection.
func forwardStream(t *testing.T, chunks []string, err error) (w *httptest.ResponseRecorder, aborted bool) {
	t.Helper()
	g := testGateway()
	g.mux = runtime.NewServeMux(runtime.WithStreamErrorHandler(g.streamError), runtime.WithOutgoingHeaderMatcher(outgoingHeader))
	w = httptest.NewRecorder()
	sw, r := withStreamResponse(w, httptest.NewRequestWithContext(t.Context(), "POST", "/api/tenants/t/reports/r/export", nil))
	ctx := runtime.NewServerMetadataContext(r.Context(), runtime.ServerMetadata{
		HeaderMD: metadata.Pairs("content-disposition", "attachment; filename=r.csv"),
	})
	i := 0
	recv := func() (proto.Message, error) {
		if i < len(chunks) {
			i++
			return &httpbody.HttpBody{ContentType: "text/csv", Data: []byte(chunks[i-1])}, nil
		}
		return nil, err
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); !ok || !errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				aborted = true
			}
		}()
		runtime.ForwardResponseStream(ctx, g.mux, bodyCodec{&runtime.HTTPBodyMarshaler{Marshaler: codec{}}}, sw, r, recv)
	}()
	return w, aborted
}

func TestStreamErrorBeforeFirstByteIsAProblem(t *testing.T) {
	bad := status.New(codes.InvalidArgument, "One or more validation errors occurred.")
	w, aborted := forwardStream(t, nil, bad.Err())
	if aborted {
		t.Fatal("aborted before the first byte")
	}
	if w.Code != http.StatusBadRequest || w.Header().Get("Content-Type") != problem.ContentType || w.Header().Get("Content-Disposition") != "" {
		t.Errorf("got %d %v", w.Code, w.Header())
	}
	var d problem.Document
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil || d.Status != http.StatusBadRequest || d.Instance != "/api/tenants/t/reports/r/export" {
		t.Errorf("body %s: %v", w.Body, err)
	}

	// An internal failure says nothing of its cause.
	w, _ = forwardStream(t, nil, status.Error(codes.Internal, "pq: relation orders.secret does not exist"))
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "secret") || w.Header().Get("Content-Type") != problem.ContentType {
		t.Errorf("got %d %s", w.Code, w.Body)
	}
}

func TestStreamErrorAfterFirstByteAborts(t *testing.T) {
	w, aborted := forwardStream(t, []string{"a,b\n", "1,2\n"}, status.Error(codes.Internal, "connection reset"))
	if !aborted {
		t.Error("a stream failing after its first byte must abort the connection, not end the file")
	}
	body, _ := io.ReadAll(w.Body)
	if string(body) != "a,b\n1,2\n" {
		t.Errorf("body %q: nothing may be appended to the file", body)
	}
}

func TestStreamWithoutErrorIsTheFile(t *testing.T) {
	w, aborted := forwardStream(t, []string{"a,b\n", "1,2\n"}, io.EOF)
	if aborted || w.Code != http.StatusOK || w.Body.String() != "a,b\n1,2\n" || w.Header().Get("Content-Disposition") != "attachment; filename=r.csv" {
		t.Errorf("got %d %q %v", w.Code, w.Body, w.Header())
	}
}
