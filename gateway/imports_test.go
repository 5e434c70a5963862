package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
)

// fakeImports is the import service of the edge tests: it receives an
// upload as the real one does (header first, then chunks) and reports
// what it received on uploads.
type fakeImports struct {
	importsv1.UnimplementedImportServiceServer
	uploads chan upload
}

// upload is what one UploadImport call received.
type upload struct {
	header    *importsv1.ImportHeader
	principal authctx.Principal
	size      int64
	sum       [32]byte
	chunks    []int
	// err is how the stream ended when it did not end with the file:
	// the call cancelled (the gateway abandoned the upload).
	err error
}

func (f *fakeImports) UploadImport(stream grpc.ClientStreamingServer[importsv1.UploadImportRequest, importsv1.UploadImportResponse]) error {
	var u upload
	defer func() { f.uploads <- u }()
	u.principal, _ = authctx.FromIncoming(stream.Context())
	first, err := stream.Recv()
	if err != nil {
		u.err = err
		return err
	}
	u.header = first.GetHeader()
	if u.header.GetKind() != "contacts" && u.header.GetKind() != "gifts" {
		// As the service: a bad header is refused before the file.
		return apperr.ToStatus(apperr.Invalid(apperr.Violation{Field: "Kind", Message: "Kind must be contacts or gifts."})).Err()
	}
	h := sha256.New()
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			u.err = err
			return err
		}
		u.chunks = append(u.chunks, len(m.GetChunk()))
		u.size += int64(len(m.GetChunk()))
		h.Write(m.GetChunk())
	}
	copy(u.sum[:], h.Sum(nil))
	return stream.SendAndClose(&importsv1.UploadImportResponse{Id: "0197a3c2-0000-7000-8000-000000000020", Status: "queued"})
}

// received waits for the fake's report of the next upload.
func (f *fakeImports) received(t *testing.T) upload {
	t.Helper()
	select {
	case u := <-f.uploads:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("the import service received no upload")
		return upload{}
	}
}

const importsURL = "/api/tenants/" + edgeTenant + "/imports"

// file is n bytes of CSV-looking content.
func file(n int) []byte {
	row := []byte("ext-1,Individual,Ada,Lovelace,ada@example.org\n")
	return bytes.Repeat(row, n/len(row)+1)[:n]
}

func startImportsEdge(t *testing.T, cfg Config) (*Gateway, *fakeImports) {
	g, u := startEdge(t, cfg)
	u.imports.uploads = make(chan upload, 4)
	return g, u.imports
}

// TestImportUploadStreams sends a file of 3.5 MiB, of unknown length and
// of declared length, through a gateway whose JSON bodies stop at 1 MiB
// and whose body budget holds 1 MiB: the service receives the header
// (tenant from the path, options from the query, the Idempotency-Key and
// Content-Type headers, the caller's principal) and then the very bytes,
// in chunks of at most 1 MiB; the answer is the service's, 202.
func TestImportUploadStreams(t *testing.T) {
	g, imports := startImportsEdge(t, Config{MaxBodyBytes: 1 << 20, BodyMemoryBytes: 1 << 20})
	content := file(3<<20 + 512<<10)
	for _, length := range []int64{-1, int64(len(content))} {
		r := request(http.MethodPost, importsURL+"?kind=contacts&format=csv&duplicates=update&dryRun=true", goodKey, "text/csv",
			io.NopCloser(bytes.NewReader(content)), length)
		r.Header.Set("Idempotency-Key", "migration-1")
		w := serve(g, r)
		if w.Code != http.StatusAccepted || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("length %d: %d %s", length, w.Code, w.Body)
		}
		var got map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got["id"] != "0197a3c2-0000-7000-8000-000000000020" || got["status"] != "queued" || len(got) != 2 {
			t.Errorf("body %s (%v)", w.Body, err)
		}
		u := imports.received(t)
		want := &importsv1.ImportHeader{TenantId: edgeTenant, Kind: "contacts", Format: "csv", Duplicates: "update", DryRun: true,
			IdempotencyKey: "migration-1", ContentType: "text/csv"}
		if !proto.Equal(u.header, want) {
			t.Errorf("header %v, want %v", u.header, want)
		}
		if u.principal.TenantID != edgeTenant || u.principal.KeyID != "k1" {
			t.Errorf("principal %+v", u.principal)
		}
		if u.size != int64(len(content)) || u.sum != sha256.Sum256(content) {
			t.Errorf("received %d bytes (sum equal: %v), sent %d", u.size, u.sum == sha256.Sum256(content), len(content))
		}
		for _, n := range u.chunks {
			if n > importChunkBytes || n == 0 {
				t.Errorf("chunks %v: each must hold 1 to %d bytes", u.chunks, importChunkBytes)
			}
		}
		if len(u.chunks) != 4 {
			t.Errorf("%d chunks, want 4 for 3.5 MiB", len(u.chunks))
		}
	}
	if held := g.budget.inUse(); held != 0 {
		t.Errorf("%d bytes held in the body budget", held)
	}
}

// TestImportUploadLimit checks the file limit: at the limit accepted, one
// byte past refused with a 413 problem, unread when the length is
// declared, and with the call cancelled (the service keeps nothing) when
// it is not.
func TestImportUploadLimit(t *testing.T) {
	const limit = 2<<20 + 100
	g, imports := startImportsEdge(t, Config{MaxImportBytes: limit})
	path := importsURL + "?kind=gifts&format=jsonl"
	w := serve(g, request(http.MethodPost, path, goodKey, "application/x-ndjson", io.NopCloser(bytes.NewReader(file(limit))), -1))
	if w.Code != http.StatusAccepted {
		t.Fatalf("at the limit: %d %s", w.Code, w.Body)
	}
	if u := imports.received(t); u.size != limit {
		t.Errorf("received %d bytes", u.size)
	}

	body := newWatchedBody(string(file(limit + 1)))
	w = serve(g, request(http.MethodPost, path, goodKey, "application/x-ndjson", body, limit+1))
	if w.Code != http.StatusRequestEntityTooLarge || w.Header().Get("Content-Type") != "application/problem+json" || body.reads.Load() != 0 {
		t.Errorf("declared one past: %d %s, %d reads", w.Code, w.Body, body.reads.Load())
	}
	if w.Header().Get("Connection") != "close" {
		t.Errorf("Connection %q", w.Header().Get("Connection"))
	}

	w = serve(g, request(http.MethodPost, path, goodKey, "application/x-ndjson", io.NopCloser(bytes.NewReader(file(limit+1))), -1))
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "larger than") {
		t.Errorf("unknown length one past: %d %s", w.Code, w.Body)
	}
	if u := imports.received(t); u.err == nil {
		t.Errorf("the service saw a complete upload of %d bytes; want the call cancelled", u.size)
	}
}

// TestImportUploadRefusals: the upload is refused like every /api/tenants
// route (no key 401, another tenant 404, both before the body is read), a
// query parameter it does not read or a bad value is a 400 under its
// name (unread), the service's refusal of the header is its answer
// without the rest of the file, and a body that cannot be read is a 400.
func TestImportUploadRefusals(t *testing.T) {
	g, imports := startImportsEdge(t, Config{})
	for _, tc := range []struct {
		name, path, key string
		want            int
		field           string
	}{
		{"no key", importsURL + "?kind=contacts&format=csv", "", http.StatusUnauthorized, ""},
		{"wrong key", importsURL + "?kind=contacts&format=csv", "ak_test_wrong", http.StatusUnauthorized, ""},
		{"another tenant", "/api/tenants/" + otherTenant + "/imports?kind=contacts&format=csv", goodKey, http.StatusNotFound, ""},
		{"unknown parameter", importsURL + "?kind=contacts&format=csv&delimiter=tab", goodKey, http.StatusBadRequest, "Delimiter"},
		{"dryRun not a boolean", importsURL + "?kind=contacts&format=csv&dryRun=maybe", goodKey, http.StatusBadRequest, "DryRun"},
		{"tenant in the query", importsURL + "?kind=contacts&format=csv&tenantId=" + otherTenant, goodKey, http.StatusBadRequest, "TenantId"},
		{"bad query string", importsURL + "?kind=%zz", goodKey, http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := newWatchedBody("externalId,firstName\n1,Ada\n")
			w := serve(g, request(http.MethodPost, tc.path, tc.key, "text/csv", body, -1))
			if w.Code != tc.want || w.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, tc.want)
			}
			if body.reads.Load() != 0 {
				t.Errorf("%d reads of a refused upload's body", body.reads.Load())
			}
			if tc.field != "" && !strings.Contains(w.Body.String(), `"`+tc.field+`"`) {
				t.Errorf("400 without an error under %s: %s", tc.field, w.Body)
			}
		})
	}
	select {
	case u := <-imports.uploads:
		t.Errorf("a refused request reached the service: %+v", u.header)
	default:
	}

	// The service refuses the header: its 400, and the gateway stops
	// sending (at most what the transport had buffered is read).
	body := newWatchedBody(string(file(64 << 20)))
	w := serve(g, request(http.MethodPost, importsURL+"?kind=donors&format=csv", goodKey, "text/csv", body, -1))
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"Kind"`) {
		t.Errorf("refused header: %d %s", w.Code, w.Body)
	}
	if reads := body.reads.Load(); reads > 32 {
		t.Errorf("%d reads of 1 MiB after the service refused the upload", reads)
	}
	imports.received(t)

	w = serve(g, request(http.MethodPost, importsURL+"?kind=contacts&format=csv", goodKey, "text/csv", errReader{}, -1))
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "could not be read") {
		t.Errorf("unreadable body: %d %s", w.Code, w.Body)
	}
	if u := imports.received(t); u.err == nil {
		t.Errorf("the service saw a complete upload after a failed read")
	}
}

// TestImportUploadShare: an upload in flight holds one chunk in the body
// budget, and uploads together at most a quarter of it. Past that share
// an upload is a 503 with Retry-After, unread and before the service
// hears of it; keyed JSON bodies are still admitted beside the full
// share; a finished upload gives its chunk back.
func TestImportUploadShare(t *testing.T) {
	// A budget of 8 MiB: an upload share of 2 MiB, two uploads.
	g, imports := startImportsEdge(t, Config{BodyMemoryBytes: 8 << 20})
	path := importsURL + "?kind=contacts&format=csv"
	content := string(file(4096))
	hold := func(path, key string) func() int {
		body := newWatchedBody(content)
		return holdRequest(t, g, request(http.MethodPost, path, key, "text/csv", body, -1), body)
	}
	upload := func() *httptest.ResponseRecorder {
		return serve(g, request(http.MethodPost, path, goodKey, "text/csv", io.NopCloser(strings.NewReader(content)), int64(len(content))))
	}

	// Two tenants: one tenant's uploads hold at most a quarter of the
	// share, and never less than one chunk (TestImportUploadTenantShare).
	first, second := hold(path, goodKey), hold("/api/tenants/"+otherTenant+"/imports?kind=contacts&format=csv", otherKey)
	if held := g.budget.inUse(); held != 2*importChunkBytes {
		t.Errorf("two uploads hold %d bytes, want %d", held, 2*importChunkBytes)
	}
	body := newWatchedBody(content)
	w := serve(g, request(http.MethodPost, path, goodKey, "text/csv", body, int64(len(content))))
	var p map[string]any
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" ||
		json.Unmarshal(w.Body.Bytes(), &p) != nil || p["type"] != "/errors/unavailable" {
		t.Fatalf("upload past the share: %d (Retry-After %q) %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if body.reads.Load() != 0 {
		t.Errorf("%d reads of the refused upload's file", body.reads.Load())
	}

	key := `{"name":"k","scopes":["contacts:view"]}`
	w = serve(g, request(http.MethodPost, keysURL, goodKey, "application/json", io.NopCloser(strings.NewReader(key)), int64(len(key))))
	if w.Code != http.StatusCreated {
		t.Errorf("keyed JSON beside a full upload share: %d %s", w.Code, w.Body)
	}

	if code := first(); code != http.StatusAccepted {
		t.Errorf("first held upload: %d", code)
	}
	imports.received(t)
	if w := upload(); w.Code != http.StatusAccepted {
		t.Errorf("upload after one finished: %d %s", w.Code, w.Body)
	}
	imports.received(t)
	if code := second(); code != http.StatusAccepted {
		t.Errorf("second held upload: %d", code)
	}
	if u := imports.received(t); u.size != int64(len(content)) {
		t.Errorf("second upload: the service received %d bytes, want %d", u.size, len(content))
	}
	select {
	case u := <-imports.uploads:
		t.Errorf("the refused upload reached the service: %+v", u)
	default:
	}
	if held := g.budget.inUse(); held != 0 {
		t.Errorf("%d bytes held after every upload ended", held)
	}
}

// TestImportUploadTenantShare: one tenant's uploads hold at most a quarter
// of the upload share. A budget of 16 MiB has an upload share of 4 MiB,
// four uploads, one per tenant: a tenant with an upload in flight has its
// next refused (503, Retry-After, unread, the service never hears of it)
// while another tenant's upload is admitted beside it.
func TestImportUploadTenantShare(t *testing.T) {
	g, imports := startImportsEdge(t, Config{BodyMemoryBytes: 16 << 20})
	content := string(file(4096))
	path := importsURL + "?kind=contacts&format=csv"
	body := newWatchedBody(content)
	held := holdRequest(t, g, request(http.MethodPost, path, goodKey, "text/csv", body, -1), body)

	refusedBody := newWatchedBody(content)
	w := serve(g, request(http.MethodPost, path, goodKey, "text/csv", refusedBody, int64(len(content))))
	var p map[string]any
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" ||
		json.Unmarshal(w.Body.Bytes(), &p) != nil || p["type"] != "/errors/unavailable" || !strings.Contains(p["title"].(string), "tenant") {
		t.Fatalf("the tenant's second upload: %d (Retry-After %q) %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if refusedBody.reads.Load() != 0 {
		t.Errorf("%d reads of the refused upload's file", refusedBody.reads.Load())
	}

	other := "/api/tenants/" + otherTenant + "/imports?kind=contacts&format=csv"
	w = serve(g, request(http.MethodPost, other, otherKey, "text/csv", io.NopCloser(strings.NewReader(content)), int64(len(content))))
	if w.Code != http.StatusAccepted {
		t.Fatalf("another tenant's upload beside the first tenant's: %d %s", w.Code, w.Body)
	}
	if u := imports.received(t); u.header.GetTenantId() != otherTenant {
		t.Errorf("the service received %s's upload, want %s's", u.header.GetTenantId(), otherTenant)
	}
	if code := held(); code != http.StatusAccepted {
		t.Errorf("held upload: %d", code)
	}
	imports.received(t)
	if n := g.budget.inUse(); n != 0 || len(g.budget.uploadsHeld) != 0 {
		t.Errorf("%d bytes, %v held after every upload ended", n, g.budget.uploadsHeld)
	}
}

// slowBody is a file that gives 10 bytes a read, each after delay: a
// client that sends slower than the minimum rate.
type slowBody struct {
	r     io.Reader
	delay time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	time.Sleep(b.delay)
	return b.r.Read(p[:min(len(p), 10)])
}

func (b *slowBody) Close() error { return nil }

// TestImportUploadTooSlowIsCut: past its grace period an upload that
// arrives slower than the minimum rate is cut: 400 naming the rate, and
// the service's call is cancelled, so nothing is imported. (Through a
// real connection the read deadline cuts a client that sends nothing:
// e2e TestImportUploadsFairPerTenant.)
func TestImportUploadTooSlowIsCut(t *testing.T) {
	g, imports := startImportsEdge(t, Config{BodyMemoryBytes: 16 << 20, ImportMinBytesPerSecond: 1 << 20, ImportRateGrace: 20 * time.Millisecond})
	body := &slowBody{r: strings.NewReader(string(file(1000))), delay: 5 * time.Millisecond}
	w := serve(g, request(http.MethodPost, importsURL+"?kind=contacts&format=csv", goodKey, "text/csv", body, 1000))
	var p struct {
		Errors map[string][]string `json:"errors"`
	}
	if w.Code != http.StatusBadRequest || json.Unmarshal(w.Body.Bytes(), &p) != nil || len(p.Errors["$"]) != 1 ||
		!strings.Contains(p.Errors["$"][0], "slower than 1048576 bytes per second") {
		t.Fatalf("slow upload: %d %s", w.Code, w.Body)
	}
	if u := imports.received(t); u.err == nil {
		t.Errorf("the service's call ended with the file (%d bytes), not cancelled", u.size)
	}
	if n := g.budget.inUse(); n != 0 {
		t.Errorf("%d bytes held after the cut upload", n)
	}
}
