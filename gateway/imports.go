package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"

	importsv1 "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/problem"
	"github.com/almoner/almoner/pkg/wirejson"
)

// importUploadPath is the route of an import's file. It is no proto
// binding: grpc-gateway would read the whole body into memory to decode
// one request message, and the file (up to 1 GiB of CSV or JSON Lines)
// is not JSON. The handler streams it into the client-streaming
// ImportService.UploadImport instead.
const importUploadPath = "/api/tenants/{tenant_id}/imports"

// DefaultMaxImportBytes is the largest import file: 1 GiB.
const DefaultMaxImportBytes = 1 << 30

// importChunkBytes is the size of the chunks the file goes in: the most
// the gateway holds of one upload at a time, well under gRPC's 4 MiB
// message limit.
const importChunkBytes = 1 << 20

// importChunk is the chunk an upload holds in the body budget: 1 MiB, or
// the whole budget where it is smaller (tests' budgets of a few bodies),
// so that every budget the gateway accepts can admit an upload.
func importChunk(cfg Config) int64 { return min(importChunkBytes, cfg.BodyMemoryBytes) }

// importIdleTimeout is how long the upload may wait for its next chunk of
// the body, and then for its answer to be written. The server's read and
// write timeouts (30 s, 60 s) count from the request's headers: they suit
// a 1 MiB JSON body, not a 1 GiB file, so this route renews its deadlines
// as the body arrives.
const importIdleTimeout = time.Minute

// importQueryFields are the ImportHeader fields the query string sets;
// the path, the Idempotency-Key header and the Content-Type set the
// others.
var importQueryFields = map[string]bool{"kind": true, "format": true, "duplicates": true, "dry_run": true}

// streamedRoutes are the routes whose handler reads the body itself, as a
// stream: routed neither buffers it (the 1 MiB limit) nor counts it in
// the body budget, and the handler checks the query string and holds its
// chunk in the budget's upload share.
var streamedRoutes = map[routeBinding]bool{{http.MethodPost, importUploadPath}: true}

// errImportTooLarge refuses a file over MaxImportBytes.
var errImportTooLarge = errors.New("gateway: import file too large")

// bodyReadError is a failure to read the client's body (a client that
// went away), as opposed to a failure of the call.
type bodyReadError struct{ err error }

func (e bodyReadError) Error() string { return "gateway: read the import file: " + e.err.Error() }
func (e bodyReadError) Unwrap() error { return e.err }

// registerImports routes the import upload to the imports service, after
// the generated routes (its GET routes) so that this handler answers the
// POST.
func (g *Gateway) registerImports(mux *runtime.ServeMux) error {
	conn := g.conns["imports"]
	if conn == nil {
		return nil
	}
	client := importsv1.NewImportServiceClient(conn)
	return mux.HandlePath(http.MethodPost, importUploadPath, func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		g.uploadImport(w, r, client, params["tenant_id"])
	})
}

// uploadImport answers POST …/imports: the request was authenticated and
// its tenant checked (route) like every /api/tenants request. It answers
// 202 with the queued import, or the one refusal refuseImport writes.
func (g *Gateway) uploadImport(w http.ResponseWriter, r *http.Request, client importsv1.ImportServiceClient, tenantID string) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	resp, err := g.receiveImport(ctx, w, r, client, tenantID)
	if err != nil {
		// Cancelling the call before answering tells the service the
		// upload was abandoned (too large, the client went away), so it
		// keeps nothing of it.
		cancel()
		g.refuseImport(ctx, w, r, err)
		return
	}
	g.writeMessage(ctx, w, r, http.StatusAccepted, resp)
}

// receiveImport reads the query string, refuses a declared length over
// the limit unread, reserves the upload's chunk in the body budget (an
// upload may take minutes, so uploads together hold at most their share
// and never the memory JSON bodies need), and streams the body into
// UploadImport.
func (g *Gateway) receiveImport(ctx context.Context, w http.ResponseWriter, r *http.Request, client importsv1.ImportServiceClient,
	tenantID string) (*importsv1.UploadImportResponse, error) {
	header, err := importHeader(r, tenantID)
	if err != nil {
		return nil, err
	}
	if r.ContentLength > g.cfg.MaxImportBytes {
		return nil, errImportTooLarge
	}
	chunk := importChunk(g.cfg)
	if err := g.budget.acquireUpload(chunk, tenantID); err != nil {
		return nil, err
	}
	defer g.budget.releaseUpload(chunk, tenantID)
	ctx, err = runtime.AnnotateContext(ctx, g.mux, r, importsv1.ImportService_UploadImport_FullMethodName,
		runtime.WithHTTPPathPattern(importUploadPath))
	if err != nil {
		return nil, err
	}
	return g.streamImport(ctx, w, r, client, header)
}

// refuseImport answers a failed upload, leaving what is left of the body
// unread: 503 when the budget's upload share or the tenant's part of it
// is spent, 413 past the size limit, 400 for a body that arrived too
// slowly or could not be read, else the call's status as every route
// answers it.
func (g *Gateway) refuseImport(ctx context.Context, w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errBodyBudget):
		g.refuseBusy(w, r)
		return
	case errors.Is(err, errTenantUploads):
		g.refuseTenantUploads(w, r)
		return
	}
	closeUnread(w, r)
	var readErr bodyReadError
	switch {
	case errors.Is(err, errImportTooLarge):
		g.writeProblem(w, r, g.problems.New(problem.CategoryTooLarge, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("The import file is larger than %d bytes.", g.cfg.MaxImportBytes)))
	case errors.Is(err, errImportTooSlow):
		d := g.problems.New(problem.CategoryValidation, http.StatusBadRequest, "One or more validation errors occurred.")
		d.Errors = map[string][]string{"$": {fmt.Sprintf("The import file arrived slower than %d bytes per second.", g.cfg.ImportMinBytesPerSecond)}}
		g.writeProblem(w, r, d)
	case errors.As(err, &readErr):
		d := g.problems.New(problem.CategoryValidation, http.StatusBadRequest, "One or more validation errors occurred.")
		d.Errors = map[string][]string{"$": {"The request body could not be read."}}
		g.writeProblem(w, r, d)
	default:
		g.handleError(ctx, g.mux, codec{}, w, r, err)
	}
}

// refuseTenantUploads answers an upload of a tenant whose uploads in
// flight hold its part of the upload share: 503 with Retry-After, as for
// a spent budget, nothing read.
func (g *Gateway) refuseTenantUploads(w http.ResponseWriter, r *http.Request) {
	closeUnread(w, r)
	w.Header().Set("Retry-After", "1")
	g.writeProblem(w, r, g.problems.New(problem.CategoryUnavailable, http.StatusServiceUnavailable,
		"This tenant has as many import uploads in progress as one tenant may; retry when one ends."))
}

// importHeader is the upload's header message: the tenant from the path,
// the options from the query string (decoded as every route decodes its
// query: a parameter the upload does not read, or a value of the wrong
// type, is a 400 under its name), the Idempotency-Key and Content-Type
// headers. The service judges the values (kind, format, duplicates).
func importHeader(r *http.Request, tenantID string) (*importsv1.ImportHeader, error) {
	h := &importsv1.ImportHeader{}
	if r.URL.RawQuery != "" {
		values, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, invalid(&wirejson.DecodeError{Violations: []apperr.Violation{{Field: "", Message: "The query string is not valid."}}})
		}
		if err := wirejson.UnmarshalQuery(values, h, func(name string) bool { return !importQueryFields[name] }); err != nil {
			return nil, invalid(err)
		}
	}
	h.TenantId = tenantID
	h.IdempotencyKey = r.Header.Get("Idempotency-Key")
	h.ContentType = r.Header.Get("Content-Type")
	return h, nil
}

// streamImport sends the header, then the body in chunks of at most
// importChunkBytes, and returns the service's answer. Only one chunk is
// held at a time, whatever the file's size. A service that refuses the
// upload early (a bad header, a missing scope) ends the stream: its status
// is the answer, and the rest of the body is left unread.
func (g *Gateway) streamImport(ctx context.Context, w http.ResponseWriter, r *http.Request, client importsv1.ImportServiceClient,
	header *importsv1.ImportHeader) (*importsv1.UploadImportResponse, error) {
	stream, err := client.UploadImport(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&importsv1.UploadImportRequest{Part: &importsv1.UploadImportRequest_Header{Header: header}}); err != nil {
		return nil, serviceAnswer(stream, err)
	}
	if hasBody(r) {
		if err := g.sendChunks(w, r, stream); err != nil {
			return nil, err
		}
	}
	return stream.CloseAndRecv()
}

// sendChunks streams r's body, renewing the connection's deadlines as it
// arrives and refusing it at the first byte past MaxImportBytes.
func (g *Gateway) sendChunks(w http.ResponseWriter, r *http.Request, stream grpc.ClientStreamingClient[importsv1.UploadImportRequest, importsv1.UploadImportResponse]) error {
	rc := http.NewResponseController(w)
	body := &pacedBody{r: r.Body, rc: rc, minRate: g.cfg.ImportMinBytesPerSecond, grace: g.cfg.ImportRateGrace}
	buf := make([]byte, importChunk(g.cfg))
	chunk := &importsv1.UploadImportRequest_Chunk{}
	msg := &importsv1.UploadImportRequest{Part: chunk}
	var total int64
	for {
		// Not every writer reaches a connection (tests' recorders).
		_ = rc.SetWriteDeadline(time.Now().Add(2 * importIdleTimeout))
		n, rerr := io.ReadFull(body, buf)
		total += int64(n)
		if total > g.cfg.MaxImportBytes {
			return errImportTooLarge
		}
		if n > 0 {
			// Send encodes the message before it returns: buf can be
			// filled again.
			chunk.Chunk = buf[:n]
			if err := stream.Send(msg); err != nil {
				return serviceAnswer(stream, err)
			}
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			return nil
		case errors.Is(rerr, errImportTooSlow):
			return rerr
		case rerr != nil:
			return bodyReadError{rerr}
		}
	}
}

// serviceAnswer is the status that ended a stream: Send reports io.EOF
// when the service answered early, and the answer is what CloseAndRecv
// receives.
func serviceAnswer(stream grpc.ClientStreamingClient[importsv1.UploadImportRequest, importsv1.UploadImportResponse], err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		return err
	}
	return errors.New("gateway: the imports service answered before the upload ended")
}

// DefaultImportMinBytesPerSecond is the slowest an import file may arrive
// once DefaultImportRateGrace has passed: 64 KiB/s, a 1 GiB file in under
// 5 hours.
const DefaultImportMinBytesPerSecond = 64 << 10

// DefaultImportRateGrace is how long an upload may wait for its file
// before the minimum rate applies (slow starts, a client's own reading).
const DefaultImportRateGrace = 10 * time.Second

// errImportTooSlow cuts an upload whose file arrives slower than
// ImportMinBytesPerSecond: it would hold its chunk of the budget, a slot of
// its tenant's share, for however long it likes.
var errImportTooSlow = errors.New("gateway: the import file arrives too slowly")

// pacedBody reads an import file at no less than minRate bytes per second
// on average, counting only the time spent waiting for the client (not
// the time the imports service takes to accept a chunk), after a grace
// period. Before each read it sets the connection's read deadline to the
// moment the average would fall below the minimum (or importIdleTimeout
// from now, if sooner), so a client that stops sending is cut then, not at
// its next byte.
type pacedBody struct {
	r       io.Reader
	rc      *http.ResponseController
	minRate int64
	grace   time.Duration
	// waited is the time spent in Read so far; read the bytes received.
	waited time.Duration
	read   int64
}

func (p *pacedBody) Read(b []byte) (int, error) {
	start := time.Now()
	// Not every writer reaches a connection (tests' recorders): then
	// only the check after the read applies.
	_ = p.rc.SetReadDeadline(start.Add(min(p.allowed()-p.waited, importIdleTimeout)))
	n, err := p.r.Read(b)
	p.waited += time.Since(start)
	p.read += int64(n)
	if p.minRate > 0 && err != io.EOF && p.waited >= p.allowed() {
		return n, errImportTooSlow
	}
	return n, err
}

// allowed is how long the bytes read so far allow the upload to have
// waited: the grace period, or the time they take at the minimum rate.
// Without a minimum, always importIdleTimeout more than it has.
func (p *pacedBody) allowed() time.Duration {
	if p.minRate <= 0 {
		return importIdleTimeout + p.waited
	}
	return max(p.grace, time.Duration(float64(p.read)/float64(p.minRate)*float64(time.Second)))
}
