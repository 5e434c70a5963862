package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/problem"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/pkg/wirejson"
)

// DefaultBodyMemoryBytes bounds the request bodies one gateway holds at
// once: 64 MiB, 64 bodies of the largest size. The gateway's container
// limit is 512 MiB, and a decoded body takes about as much again.
const DefaultBodyMemoryBytes = 64 << 20

// bodyBudget counts the bytes of request bodies the gateway holds, from
// the moment a body is admitted until its request is answered, against a
// total for all requests and smaller shares for two kinds of holder that
// must never starve keyed JSON callers: public routes (no API key), whose
// anonymous uploaders may be however slow and however many, and import
// uploads, each of which holds one chunk for as long as its file takes to
// arrive (minutes for a large one). It refuses rather than waits: a
// refused request answers 503 at once and holds nothing.
type bodyBudget struct {
	mu    sync.Mutex
	total int64
	used  int64
	// share and held are by access: what each kind may hold, and holds.
	share [accessKinds]int64
	held  [accessKinds]int64
	// tenantShare is what one tenant's uploads may hold (a quarter of the
	// upload share, at least one chunk), and uploadsHeld what each holds:
	// uploads last minutes, so without it one tenant's slow uploads would
	// hold every slot for as long as they last.
	tenantShare int64
	uploadsHeld map[string]int64
}

// access is whose share of the budget a reservation counts against.
type access int

const (
	// accessKeyed is a JSON body sent with an API key: the whole budget.
	accessKeyed access = iota
	// accessPublic is a JSON body of a route without a key.
	accessPublic
	// accessUpload is the chunk an import upload holds while it streams.
	accessUpload
	accessKinds
)

// String is the access's label on the refusal counter.
func (a access) String() string {
	return [accessKinds]string{"keyed", "public", "upload"}[a]
}

var (
	bodyBytesHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "almoner_gateway_request_body_bytes_held",
		Help: "Bytes of request bodies the gateway holds (reserved in its body budget, ALMONER_BODY_MEMORY_BYTES).",
	})
	bodyRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "almoner_gateway_request_body_refusals_total",
		Help: "Requests answered 503 because the body budget was spent, by access (public: no API key; keyed; upload: an import file).",
	}, []string{"access"})
)

func init() { telemetry.Register(bodyBytesHeld, bodyRefusals) }

// publicBodyCopies is what a body of a route without a key counts in the
// budget, in multiples of its length: the copies of it that live while
// its request is answered, in a process that runs the gateway and the
// services (`almoner serve`). A processor notification is held by the
// gateway, encoded into its gRPC request, received by the orders service
// and decoded into the request's payload field: four copies, and the
// body of the contact form about as many once decoded. Counted at its
// length alone, 16 MiB of them cost about 100 MB more (docs/gateway.md).
// Keyed bodies count their length: the callers are known, and the
// container's limit is sized for the budget's total several times over.
const publicBodyCopies = 4

// newBodyBudget returns a budget of total bytes. Public routes and import
// uploads may each hold a quarter of it, but always at least one body of
// maxBody bytes (with its copies) and one chunk of chunk bytes.
func newBodyBudget(total, maxBody, chunk int64) *bodyBudget {
	b := &bodyBudget{total: total}
	b.share[accessKeyed] = total
	b.share[accessPublic] = min(total, max(total/4, maxBody*publicBodyCopies))
	b.share[accessUpload] = min(total, max(total/4, chunk))
	b.tenantShare = max(b.share[accessUpload]/4, chunk)
	b.uploadsHeld = map[string]int64{}
	return b
}

// acquire reserves n bytes, or reports false when that would exceed the
// total or the share of a.
func (b *bodyBudget) acquire(n int64, a access) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserve(n, a)
}

// acquireUpload reserves an upload's n bytes for tenant: errTenantUploads
// past the tenant's own share, errBodyBudget past the upload share or the
// total.
func (b *bodyBudget) acquireUpload(n int64, tenant string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.uploadsHeld[tenant]+n > b.tenantShare {
		bodyRefusals.WithLabelValues(accessUpload.String()).Inc()
		return errTenantUploads
	}
	if !b.reserve(n, accessUpload) {
		return errBodyBudget
	}
	b.uploadsHeld[tenant] += n
	return nil
}

// releaseUpload returns n bytes reserved with acquireUpload.
func (b *bodyBudget) releaseUpload(n int64, tenant string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free(n, accessUpload)
	if b.uploadsHeld[tenant] -= n; b.uploadsHeld[tenant] <= 0 {
		delete(b.uploadsHeld, tenant)
	}
}

// cost is what n bytes of a body of access a count in the budget.
func cost(n int64, a access) int64 {
	if a == accessPublic {
		return n * publicBodyCopies
	}
	return n
}

// reserve is acquire with b.mu held.
func (b *bodyBudget) reserve(n int64, a access) bool {
	n = cost(n, a)
	if b.used+n > b.total || b.held[a]+n > b.share[a] {
		bodyRefusals.WithLabelValues(a.String()).Inc()
		return false
	}
	bodyBytesHeld.Add(float64(n))
	b.used += n
	b.held[a] += n
	return true
}

// release returns n bytes reserved with acquire.
func (b *bodyBudget) release(n int64, a access) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free(n, a)
}

// free is release with b.mu held.
func (b *bodyBudget) free(n int64, a access) {
	n = cost(n, a)
	bodyBytesHeld.Sub(float64(n))
	b.used -= n
	b.held[a] -= n
}

// inUse reports the bytes held, for tests.
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// bufferedBody is a request body read in full by the gateway. The codec
// decodes its bytes in place instead of copying them again, under the
// route's options (routed sets them): what the body may carry besides the
// fields of its message.
type bufferedBody struct {
	*bytes.Reader
	data []byte
	opts wirejson.Options
	// rawType is the media type of a body that is no JSON (rawBodyRoutes):
	// the codec hands its bytes to the RPC as a google.api.HttpBody.
	rawType string
}

func (*bufferedBody) Close() error { return nil }

// unread returns the bytes not yet read, without copying them.
func (b *bufferedBody) unread() []byte { return b.data[len(b.data)-b.Len():] }

// hasBody reports whether r may carry body bytes: a Content-Length above
// zero, or a body of unknown length (chunked).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// closeUnread makes the server close the connection after this response
// when it is sent before r's body was read (or read to the end). Otherwise
// net/http, to keep the connection, reads and discards up to 256 KiB of
// what is left once the handler returns, waiting up to the server's read
// timeout for a client that sent only its headers: work and a connection
// held for a caller already refused. A read deadline in the past makes
// that read end at once; Connection: close tells the client why the
// connection ends.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if !hasBody(r) {
		return
	}
	w.Header().Set("Connection", "close")
	// Not every writer reaches a connection (tests' recorders): then
	// there is nothing to stop.
	_ = http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
}

// jsonMediaType reports whether a Content-Type names JSON:
// application/json or any application/*+json, in UTF-8 (RFC 8259's only
// encoding) when it names a charset at all. Stripe's notifications carry
// "application/json; charset=utf-8".
func jsonMediaType(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return false
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || strings.HasSuffix(sub, "+json"))
}

// refuseBusy answers a request whose body the budget cannot hold: 503
// with Retry-After, nothing read.
func (g *Gateway) refuseBusy(w http.ResponseWriter, r *http.Request) {
	closeUnread(w, r)
	// problem.Write may set it too; a refusal of this kind must carry it
	// whatever that does.
	w.Header().Set("Retry-After", "1")
	g.writeProblem(w, r, g.problems.New(problem.CategoryUnavailable, http.StatusServiceUnavailable,
		"The server is receiving too many request bodies at once; retry shortly."))
}

// errBodyBudget is readBody's and the upload's refusal when the budget is
// spent.
var errBodyBudget = errors.New("gateway: request body budget exhausted")

// errTenantUploads refuses an upload of a tenant whose uploads already
// hold its share of the upload share.
var errTenantUploads = errors.New("gateway: the tenant's uploads hold its share of the body budget")

// errBodyTooLarge is readBody's refusal of a body over MaxBodyBytes.
var errBodyTooLarge = errors.New("gateway: request body too large")

// unknownLengthStep is the first reservation for a body of unknown length;
// each further one doubles what is held, up to MaxBodyBytes.
const unknownLengthStep = 32 << 10

// readBody reads r's body in full and returns it with the bytes it holds
// in the budget, which the caller releases once the request is answered.
// A declared Content-Length is reserved whole before the first byte is
// read, and one over MaxBodyBytes is refused unread; a body of unknown
// length is reserved as it grows, and refused at the first byte past the
// limit.
func (g *Gateway) readBody(r *http.Request, a access) ([]byte, int64, error) {
	limit := g.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, 0, errBodyTooLarge
	}
	if r.ContentLength > 0 {
		if !g.budget.acquire(r.ContentLength, a) {
			return nil, 0, errBodyBudget
		}
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			g.budget.release(r.ContentLength, a)
			return nil, 0, err
		}
		return buf, r.ContentLength, nil
	}
	var held int64
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) == limit {
				// Full at the limit: one more byte makes it too large.
				var one [1]byte
				n, err := io.ReadFull(r.Body, one[:])
				if n > 0 {
					g.budget.release(held, a)
					return nil, 0, errBodyTooLarge
				}
				if err != io.EOF {
					g.budget.release(held, a)
					return nil, 0, err
				}
				return buf, held, nil
			}
			next := min(max(2*int64(cap(buf)), unknownLengthStep), limit)
			if !g.budget.acquire(next-held, a) {
				g.budget.release(held, a)
				return nil, 0, errBodyBudget
			}
			held = next
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, held, nil
		}
		if err != nil {
			g.budget.release(held, a)
			return nil, 0, err
		}
	}
}

// admitBody checks and reads the body of a request the mux routed, before
// its handler runs: so only after the key and the tenant were checked
// (route) and the path and method matched a route, and never for a
// request that is refused anyway. It answers 415 for a body that is not
// JSON (or, on a route that takes a file, not one of rawTypes), 413 past
// MaxBodyBytes, 503 when the body budget is spent, and otherwise runs
// next with the body in memory, holding its budget until next returns.
func (g *Gateway) admitBody(w http.ResponseWriter, r *http.Request, rawTypes []string, next func(*http.Request)) {
	if !hasBody(r) {
		next(r)
		return
	}
	rawType, refusal := admittedType(r.Header.Get("Content-Type"), rawTypes)
	if refusal != "" {
		closeUnread(w, r)
		g.writeProblem(w, r, g.problems.New(problem.CategoryUnsupportedMedia, http.StatusUnsupportedMediaType, refusal))
		return
	}
	a := accessKeyed
	if _, ok := r.Context().Value(principalKey{}).(authctx.Principal); !ok {
		a = accessPublic
	}
	body, held, err := g.readBody(r, a)
	switch {
	case errors.Is(err, errBodyTooLarge):
		closeUnread(w, r)
		g.writeProblem(w, r, g.problems.New(problem.CategoryTooLarge, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("The request body is larger than %d bytes.", g.cfg.MaxBodyBytes)))
		return
	case errors.Is(err, errBodyBudget):
		g.refuseBusy(w, r)
		return
	case err != nil:
		closeUnread(w, r)
		d := g.problems.New(problem.CategoryValidation, http.StatusBadRequest, "One or more validation errors occurred.")
		d.Errors = map[string][]string{"$": {"The request body could not be read."}}
		g.writeProblem(w, r, d)
		return
	}
	defer g.budget.release(held, a)
	_ = r.Body.Close()
	r.Body = &bufferedBody{Reader: bytes.NewReader(body), data: body, rawType: rawType}
	r.ContentLength = int64(len(body))
	next(r)
}

// rawBodyRoutes are the routes whose body is a file, not JSON, with the
// media types each takes; the RPC reads it as a google.api.HttpBody
// (openapigen's rawRequests says the same in the document).
var rawBodyRoutes = map[routeBinding][]string{
	{http.MethodPut, "/api/tenants/{tenant_id}/branding/logo"}: {"image/png", "image/jpeg"},
}

// admittedType checks a request's Content-Type against its route: JSON
// for every route but rawBodyRoutes, one of their media types (types) for
// those (returned, to travel with the body). refusal is the 415's detail.
func admittedType(ct string, types []string) (rawType, refusal string) {
	if types == nil {
		if jsonMediaType(ct) {
			return "", ""
		}
		return "", "The request body must be JSON: Content-Type application/json."
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && slices.Contains(types, mt) {
		return mt, ""
	}
	return "", "The request body must be one of: Content-Type " + strings.Join(types, ", ") + "."
}
