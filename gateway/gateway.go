// Package gateway is Almoner's REST edge: grpc-gateway routes in front of
// the gRPC services, with API-key authentication, the tenant check, the
// wire JSON codec and RFC 7807 errors.
//
// Every request under /api/tenants is authenticated before routing: the
// X-Api-Key header goes to the auth service's ValidateKey over gRPC (or is
// answered from the gateway's epoch-leased cache of successes), a
// tenant in the path that is not the key's answers 404, and the principal
// travels to the service as an assertion signed with the deployment's
// internal key (pkg/authctx), as every call the gateway makes is signed.
// Services verify it and check scopes themselves.
//
// No body is read before that: a request's body is read only once its key
// and tenant are accepted (or its route is public) and its path and method
// match a route, within a per-request limit and a budget for all bodies
// held at once (body.go). docs/gateway.md describes the order of checks.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/almoner/almoner/gateway/console"
	"github.com/almoner/almoner/gateway/internal/httpmap"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/problem"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/pkg/telemetry"
	"github.com/almoner/almoner/pkg/traceid"
	"github.com/almoner/almoner/pkg/transport"
	"github.com/almoner/almoner/pkg/wirejson"
)

// DefaultMaxBodyBytes is the request body limit: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// Config configures the gateway.
type Config struct {
	// Upstreams maps a service name (auth, contacts, …) to its gRPC
	// address. Services without an address are not routed.
	Upstreams map[string]string
	// ErrorsBaseURL prefixes problem type URIs; "/errors" by default.
	ErrorsBaseURL string
	// MaxBodyBytes limits request bodies; DefaultMaxBodyBytes by default.
	MaxBodyBytes int64
	// MaxImportBytes limits an import's file (POST …/imports, streamed,
	// outside MaxBodyBytes and the body budget); DefaultMaxImportBytes by
	// default.
	MaxImportBytes int64
	// ImportMinBytesPerSecond is the slowest an import file may arrive,
	// averaged over the time the gateway waits for it once
	// ImportRateGrace has passed (ALMONER_IMPORT_MIN_BYTES_PER_SECOND);
	// DefaultImportMinBytesPerSecond by default, negative for no minimum.
	ImportMinBytesPerSecond int64
	// ImportRateGrace is how long an upload may wait for its file before
	// the minimum rate applies (ALMONER_IMPORT_RATE_GRACE);
	// DefaultImportRateGrace by default.
	ImportRateGrace time.Duration
	// BodyMemoryBytes bounds the bytes of all request bodies held at once
	// (ALMONER_BODY_MEMORY_BYTES); DefaultBodyMemoryBytes by default. It
	// must hold at least one body of MaxBodyBytes. Routes without an API
	// key may hold a quarter of it, each counted with its copies.
	BodyMemoryBytes int64
	// Logger receives one line per failed request.
	Logger *slog.Logger
	// TrustedProxies are the peers (load balancers, ingress) whose
	// X-Forwarded-For names the client (ALMONER_TRUSTED_PROXIES). From any
	// other peer the header is ignored and the peer is the client.
	TrustedProxies []netip.Prefix
	// InternalKey signs every call to the services (ALMONER_INTERNAL_KEY):
	// the principal of a validated key, or the gateway's own assertion
	// for key validation and the public routes. Required.
	InternalKey *authctx.Key
}

// Gateway is the REST edge as an http.Handler.
type Gateway struct {
	cfg Config
	// mux routes every path; families route the paths of one resource
	// each, with only the services that serve it (families.go).
	mux      *runtime.ServeMux
	families map[string]*runtime.ServeMux
	conns    map[string]*grpc.ClientConn
	keys     *keyCache
	stopKeys context.CancelFunc
	keysDone chan struct{}
	problems problem.Renderer
	logger   *slog.Logger
	handler  http.Handler
	budget   *bodyBudget
	// console is the staff console under /console, which calls handler
	// in-process (gateway/console).
	console *console.Console
}

type principalKey struct{}

// New dials every upstream and registers its routes.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	g := &Gateway{
		cfg:      cfg,
		conns:    map[string]*grpc.ClientConn{},
		problems: problem.Renderer{BaseURL: cfg.ErrorsBaseURL},
		logger:   cfg.Logger,
		budget:   newBodyBudget(cfg.BodyMemoryBytes, cfg.MaxBodyBytes, importChunk(cfg)),
	}
	g.mux = g.newMux()
	if err := g.connect(ctx); err != nil {
		g.Close()
		return nil, err
	}
	g.startKeyCache(ctx)
	g.handler = secureHeaders(g.observe(g.recoverPanics(g.withTrace(g.opsHandler(http.HandlerFunc(g.route))))))
	g.console = console.New(console.Config{API: g.handler, Logger: cfg.Logger})
	return g, nil
}

// complete fills in the defaults of unset limits and checks what has none.
func (cfg *Config) complete() error {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.BodyMemoryBytes <= 0 {
		cfg.BodyMemoryBytes = DefaultBodyMemoryBytes
	}
	if cfg.MaxImportBytes <= 0 {
		cfg.MaxImportBytes = DefaultMaxImportBytes
	}
	if cfg.ImportMinBytesPerSecond == 0 {
		cfg.ImportMinBytesPerSecond = DefaultImportMinBytesPerSecond
	}
	if cfg.ImportRateGrace <= 0 {
		cfg.ImportRateGrace = DefaultImportRateGrace
	}
	if cfg.BodyMemoryBytes < cfg.MaxBodyBytes {
		return fmt.Errorf("gateway: the body budget (%d bytes) cannot hold one body of the largest size (%d bytes)", cfg.BodyMemoryBytes, cfg.MaxBodyBytes)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Upstreams[authName] == "" {
		return errors.New("gateway: the auth service address is required")
	}
	if cfg.InternalKey == nil {
		return fmt.Errorf("gateway: %w", authctx.ErrNoKey)
	}
	return nil
}

// newMux is the grpc-gateway mux with the edge's codec, header rules,
// status mapping and error rendering.
func (g *Gateway) newMux() *runtime.ServeMux {
	return runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, bodyCodec{&runtime.HTTPBodyMarshaler{Marshaler: codec{}}}),
		runtime.WithIncomingHeaderMatcher(incomingHeader),
		runtime.WithOutgoingHeaderMatcher(outgoingHeader),
		runtime.WithOutgoingTrailerMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithMetadata(g.annotate),
		runtime.WithForwardResponseOption(successStatus),
		runtime.WithErrorHandler(g.handleError),
		runtime.WithStreamErrorHandler(g.streamError),
		runtime.WithRoutingErrorHandler(g.handleRoutingError),
		runtime.WithWriteContentLength(),
		runtime.WithMiddlewares(g.routed),
		// Otherwise a form-encoded POST to a GET route would run the GET
		// (and X-HTTP-Method-Override could make it any method): every
		// route answers its own method only, and a body must be JSON.
		runtime.WithDisablePathLengthFallback(),
	)
}

// connect dials every upstream and registers its routes, then the
// gateway's own routes (processor notifications, the import upload), on
// the full mux, then on each family's mux (families.go). On failure the
// caller closes what was dialled.
func (g *Gateway) connect(ctx context.Context) error {
	names := slices.Sorted(maps.Keys(g.cfg.Upstreams))
	for _, name := range names {
		if err := g.dial(name, g.cfg.Upstreams[name]); err != nil {
			return err
		}
	}
	sets := g.routeSets(names)
	for _, s := range sets {
		if err := s.register(ctx, g.mux); err != nil {
			return err
		}
	}
	return g.buildFamilies(ctx, sets)
}

// boundSet is a set of routes as the gateway registers it: a proto
// service's generated routes on its upstream's connection, or one of the
// gateway's own routes (templates says which paths it serves).
type boundSet struct {
	// service is the proto service's full name; "" for an own route.
	service string
	// templates are an own route's path templates.
	templates []string
	register  func(context.Context, *runtime.ServeMux) error
}

// routeSets returns what the gateway registers for the named upstreams,
// in order: every route set of each upstream, then its own routes.
//
// Upstreams are registered in name order: where two services' routes
// match one path, the one registered last is tried first, so the order
// must not be a map's. GET …/shipments/pick-list (reports) must win over
// GET …/shipments/{shipmentId} (inventory), and "reports" sorts after
// "inventory" (TestShipmentDocuments goes through it).
func (g *Gateway) routeSets(names []string) []boundSet {
	var out []boundSet
	for _, name := range names {
		conn := g.conns[name]
		for _, rs := range registry[name] {
			out = append(out, boundSet{service: rs.service, register: func(ctx context.Context, mux *runtime.ServeMux) error {
				if err := rs.register(ctx, mux, conn); err != nil {
					return fmt.Errorf("gateway: register %s routes: %w", rs.service, err)
				}
				return nil
			}})
		}
	}
	if slices.Contains(names, "orders") {
		out = append(out, boundSet{templates: []string{stripeNotificationPath}, register: func(_ context.Context, mux *runtime.ServeMux) error {
			if err := g.registerNotifications(mux); err != nil {
				return fmt.Errorf("gateway: register processor notifications: %w", err)
			}
			return nil
		}})
	}
	if slices.Contains(names, "imports") {
		out = append(out, boundSet{templates: []string{importUploadPath}, register: func(_ context.Context, mux *runtime.ServeMux) error {
			if err := g.registerImports(mux); err != nil {
				return fmt.Errorf("gateway: register the import upload: %w", err)
			}
			return nil
		}})
	}
	return out
}

// dial opens one shared connection to an upstream: its routes (on every
// mux), key validation and health checks all use it, and every call on it
// is signed.
func (g *Gateway) dial(name, addr string) error {
	if _, ok := registry[name]; !ok {
		return fmt.Errorf("gateway: unknown service %q", name)
	}
	opts := append(append(append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, transport.DialOptions()...),
		telemetry.GRPCClientOptions()...), g.cfg.InternalKey.DialOptions()...)
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return fmt.Errorf("gateway: dial %s at %s: %w", name, addr, err)
	}
	g.conns[name] = conn
	return nil
}

// startKeyCache starts the key cache's poller, which Close stops.
func (g *Gateway) startKeyCache(ctx context.Context) {
	g.keys = newKeyCache(authv1.NewKeyValidationServiceClient(g.conns[authName]), g.cfg.Logger)
	var keysCtx context.Context
	keysCtx, g.stopKeys = context.WithCancel(context.WithoutCancel(ctx))
	g.keysDone = make(chan struct{})
	go func() {
		defer close(g.keysDone)
		g.keys.run(keysCtx)
	}()
}

// Close stops the key cache's poller (reporting its last key uses) and
// closes the upstream connections.
func (g *Gateway) Close() {
	if g.stopKeys != nil {
		g.stopKeys()
		<-g.keysDone
	}
	for _, c := range g.conns {
		_ = c.Close()
	}
}

// Conn returns the connection to an upstream service, or nil.
func (g *Gateway) Conn(service string) *grpc.ClientConn { return g.conns[service] }

// ServeHTTP serves the REST API.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

func init() {
	// grpc-gateway keeps the query parameter parser in a package variable
	// that every NewServeMux given the option writes; set it once, before
	// any goroutine runs, instead of racing on it from every gateway
	// (tests start many in parallel).
	runtime.NewServeMux(runtime.SetQueryParameterParser(queryParser{}))
}

const tenantsPrefix = "/api/tenants"

func (g *Gateway) route(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == tenantsPrefix || strings.HasPrefix(r.URL.Path, tenantsPrefix+"/") {
		var ok bool
		if r, ok = g.authenticate(w, r); !ok {
			return
		}
	} else if isAuthPath(r.URL.Path) {
		var ok bool
		if r, ok = g.authenticateStaff(w, r); !ok {
			return
		}
	} else if isAdminPath(r.URL.Path) {
		var ok bool
		if r, ok = g.authenticateOperator(w, r); !ok {
			return
		}
	}
	sw, r := withStreamResponse(w, r)
	g.muxFor(r).ServeHTTP(sw, r)
}

// authenticate validates X-Api-Key and checks the tenant in the path, from
// the headers and the path alone: the body is not read yet. It writes the
// response and returns false when the request must stop.
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	// A browser's staff session stands in for a key; a key, when present,
	// decides (session.go).
	if token := sessionToken(r); token != "" && r.Header.Get("X-Api-Key") == "" {
		return g.authenticateSession(w, r, token)
	}
	// ValidateKey runs even without a header, so that a missing key takes
	// the same path (and about the same time) as a wrong one. Only
	// successes are cached, so every failure still takes that path.
	resp, err := g.keys.Validate(r.Context(), r.Header.Get("X-Api-Key"))
	if err != nil {
		closeUnread(w, r)
		if status.Code(err) == codes.Unauthenticated {
			g.writeUnauthorized(w)
			return r, false
		}
		g.handleError(r.Context(), g.mux, codec{}, w, r, err)
		return r, false
	}
	tid, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, tenantsPrefix+"/"), "/")
	pathTenant, perr := uuid.Parse(tid)
	keyTenant, kerr := uuid.Parse(resp.GetTenantId())
	if perr != nil || kerr != nil || pathTenant != keyTenant {
		closeUnread(w, r)
		g.writeProblem(w, r, g.problems.New(problem.CategoryNotFound, http.StatusNotFound, "Not Found"))
		return r, false
	}
	p := authctx.Principal{
		TenantID: resp.GetTenantId(), KeyID: resp.GetKeyId(), KeyPrefix: resp.GetKeyPrefix(),
		Scopes: resp.GetScopes(), Features: resp.GetFeatures(), Currency: resp.GetDefaultCurrency(),
	}
	// The route's gRPC call is made with this context (grpc-gateway's
	// handlers derive theirs from the request's): the connection's
	// interceptor signs p for it.
	ctx := authctx.NewOutgoingContext(context.WithValue(r.Context(), principalKey{}, p), p)
	return r.WithContext(ctx), true
}

// writeUnauthorized sends the one 401: the same status, headers and bytes
// for every cause, so a caller learns nothing about which check failed.
func (g *Gateway) writeUnauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `ApiKey header="X-Api-Key"`)
	problem.Write(w, problem.Unauthorized(g.problems))
}

// annotate is the mux's metadata annotator: the trace id, the client's
// address (clientIP) and, on /api/auth routes, the trusted-device cookie
// (deviceCookie), in one map (the principal goes as a signed assertion:
// authenticate). grpc-gateway joins each annotator's metadata into a new
// map, so one annotator costs one copy where three cost three. It is
// also the first place that knows the matched route template
// (grpc-gateway adds it to ctx just before annotating), so it notes it
// for observe.
func (g *Gateway) annotate(ctx context.Context, r *http.Request) metadata.MD {
	noteRoute(ctx, r)
	md := make(metadata.MD, 3)
	if id := traceid.FromContext(r.Context()); id != "" {
		md[traceid.MetadataKey] = []string{id}
	}
	if ip, ok := g.clientIP(r); ok {
		md[ratelimit.MetadataKey] = []string{ip}
	}
	for k, v := range deviceCookie(ctx, r) {
		md[k] = v
	}
	return md
}

// clientIP is the client's address, forwarded under ratelimit.MetadataKey
// (the rate-limit key of public routes such as the contact form). No
// client header can set that key: incomingHeader forwards none of that
// name.
func (g *Gateway) clientIP(r *http.Request) (string, bool) {
	ip, ok := ratelimit.ClientIP(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), g.cfg.TrustedProxies)
	if !ok {
		return "", false
	}
	return ip.String(), true
}

// forwardedHeaders are the only request headers that reach services.
var forwardedHeaders = map[string]string{
	"Idempotency-Key": "idempotency-key",
	"If-Match":        "if-match",
	// With the client's address, the record of a donor accepting a bank
	// debit's mandate online (the orders service's processor payments).
	"User-Agent": "client-user-agent",
	// The documents that answer JSON or a PDF as the client prefers (an
	// order's receipt).
	"Accept": "accept",
}

// incomingHeader drops every client header except a short allow-list, so
// no client can smuggle metadata of its own (x-almoner-*) to a service.
func incomingHeader(key string) (string, bool) {
	v, ok := forwardedHeaders[http.CanonicalHeaderKey(key)]
	return v, ok
}

// bodyCodec writes google.api.HttpBody responses raw (reports' run
// documents and file exports) and streams HttpBody chunks back to back: the
// default newline between stream messages would corrupt a file.
type bodyCodec struct{ *runtime.HTTPBodyMarshaler }

// Delimiter is empty: a streamed HttpBody is one file in pieces.
func (bodyCodec) Delimiter() []byte { return nil }

// returnedHeaders are the only service response headers sent to clients.
var returnedHeaders = map[string]string{
	"content-disposition": "Content-Disposition",
	"etag":                "ETag",
	"idempotent-replayed": "Idempotent-Replayed",
	"location":            "Location",
	// The staff session cookie of a sign-in, and its deletion at sign-out.
	"set-cookie": "Set-Cookie",
}

func outgoingHeader(key string) (string, bool) {
	v, ok := returnedHeaders[strings.ToLower(key)]
	return v, ok
}

// successStatus sets the status of a successful call from the RPC's verb
// (httpmap.SuccessStatus, which the published document reads too): 201
// Created, 204 No Content (without a body) or the default 200.
func successStatus(ctx context.Context, w http.ResponseWriter, _ proto.Message) error {
	method, ok := runtime.RPCMethod(ctx)
	if !ok {
		return nil
	}
	switch code := httpmap.SuccessStatus(method[strings.LastIndexByte(method, '/')+1:]); code {
	case http.StatusNoContent:
		w.Header().Del("Content-Type")
		w.Header().Del("Content-Length")
		w.WriteHeader(code)
	case http.StatusOK:
	default:
		w.WriteHeader(code)
	}
	return nil
}

// handleError renders a failed call as a problem document.
func (g *Gateway) handleError(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	st := status.Convert(err)
	if st.Code() == codes.Unauthenticated {
		g.writeUnauthorized(w)
		return
	}
	if problem.IsRateLimited(st) {
		// The spec's 429 is a flat {"message": …}, not a problem document.
		problem.WriteRateLimited(w)
		return
	}
	d := g.problems.FromStatus(st)
	if d.Status >= 500 {
		// The status text may hold upstream detail; it goes to the log
		// only, under the trace id the client sees.
		g.logger.ErrorContext(ctx, "request failed", "method", r.Method, "path", r.URL.Path,
			"code", st.Code().String(), "error", st.Message())
	}
	g.writeProblem(w, r, d)
}

// handleRoutingError answers a request no route matched, before its body
// is read.
func (g *Gateway) handleRoutingError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	if isProbe(r) {
		// The method is not routed for this path: allowedMethods reads
		// that from the probe, and no response is wanted.
		return
	}
	closeUnread(w, r)
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		g.writeMethodNotAllowed(w, r)
	case http.StatusBadRequest:
		d := g.problems.New(problem.CategoryValidation, http.StatusBadRequest, "One or more validation errors occurred.")
		d.Errors = map[string][]string{"": {"The request path is not valid."}}
		g.writeProblem(w, r, d)
	default:
		g.writeProblem(w, r, g.problems.New(problem.CategoryNotFound, http.StatusNotFound, "Not Found"))
	}
}

// writeMessage answers status with m in the wire codec, for the routes a
// handler of ours serves instead of grpc-gateway (processor notifications,
// import uploads).
func (g *Gateway) writeMessage(ctx context.Context, w http.ResponseWriter, r *http.Request, status int, m proto.Message) {
	b, err := wirejson.Marshal(m)
	if err != nil {
		g.handleError(ctx, g.mux, codec{}, w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (g *Gateway) writeProblem(w http.ResponseWriter, r *http.Request, d problem.Document) {
	d.Instance = r.URL.Path
	d.TraceID = traceid.FromContext(r.Context())
	problem.Write(w, d)
}

// withTrace gives every request a trace id, taken from a valid W3C
// traceparent header when the caller sent one.
func (g *Gateway) withTrace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if trace.SpanContextFromContext(r.Context()).HasTraceID() {
			// The request's span (observe) already names the trace.
			next.ServeHTTP(w, r)
			return
		}
		id := traceFromParent(r.Header.Get("traceparent"))
		if id == "" {
			id = traceid.New()
		}
		next.ServeHTTP(w, r.WithContext(traceid.NewContext(r.Context(), id)))
	})
}

func traceFromParent(tp string) string {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(parts[1]) != 32 || parts[1] == strings.Repeat("0", 32) {
		return ""
	}
	for _, c := range parts[1] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	return parts[1]
}

// recoverPanics turns a panic in the edge into a sanitized 500.
func (g *Gateway) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				g.logger.ErrorContext(r.Context(), "panic in gateway", "panic", fmt.Sprint(v),
					"stack", string(debug.Stack()))
				g.writeProblem(w, r, g.problems.New(problem.CategoryInternal, http.StatusInternalServerError, "An unexpected error occurred."))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
