package stripefake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Server is a running fake Stripe. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the API base to give stripeproc.Config.APIBase.
	URL string

	srv *httptest.Server

	mu            sync.Mutex
	intents       map[string]*intent
	customers     map[string]*customer
	methods       map[string]*method
	refunds       map[string]*refund
	idem          map[idemKey]*stored
	events        []Event
	requests      []Request
	revoked       map[string]bool
	failNext      int
	failStatus    int
	loseNext      int
	refuseRefunds bool
}

// New starts a fake Stripe on a loopback port. Close it when done.
func New() *Server {
	s := &Server{
		intents:   map[string]*intent{},
		customers: map[string]*customer{},
		methods:   map[string]*method{},
		refunds:   map[string]*refund{},
		idem:      map[idemKey]*stored{},
		revoked:   map[string]bool{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server: from then on it is unreachable (connection
// refused), as Stripe is when the network fails. Its state stays
// readable.
func (s *Server) Close() { s.srv.Close() }

// Request is one request the fake received, as sent.
type Request struct {
	Method string
	Path   string
	// SecretKey is the account's key from the Authorization header.
	SecretKey      string
	IdempotencyKey string
	// StripeVersion is the API version the client pinned.
	StripeVersion string
	// Form holds every parameter (body and query), as Stripe reads them:
	// metadata[order_id], payment_method_types[0], ….
	Form url.Values
	// Parsed parameters of the charge, refund and attach requests; zero
	// when absent.
	Amount        int64
	Currency      string
	PaymentMethod string
	Customer      string
	OffSession    bool
	Metadata      map[string]string
	// Status is the answer's HTTP status (0 when the answer was lost).
	Status int
	// Replay is true when the answer was the one stored under the
	// idempotency key, and nothing was done.
	Replay bool
	// Injected is true when the answer came from FailNext.
	Injected bool
	// Lost is true when the request took effect but its answer was
	// dropped (LoseNextResponses).
	Lost bool
}

// Requests returns every request received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// FailNext makes the next n requests fail with status (500 when 0) and a
// Stripe error body (api_error for 5xx, rate_limit for 429,
// idempotency_key_in_use for 409, invalid_request_error otherwise),
// without taking effect.
func (s *Server) FailNext(n, status int) {
	if status == 0 {
		status = http.StatusInternalServerError
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext, s.failStatus = n, status
}

// LoseNextResponses makes the next n requests take effect (and be stored
// under their idempotency key) but cuts their answers: the connection
// closes in the middle of the body, as when a network fails after Stripe
// acted. A retry with the same idempotency key then gets the stored
// answer.
func (s *Server) LoseNextResponses(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseNext = n
}

// RefuseRefunds makes refunds answer 400 invalid_request_error
// (charge_not_refundable) while on.
func (s *Server) RefuseRefunds(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseRefunds = on
}

// RevokeKey makes every request with the secret key answer 401, as
// Stripe does for a rolled or deleted key.
func (s *Server) RevokeKey(secretKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked[secretKey] = true
}

type idemKey struct{ secretKey, key string }

// stored is an answer kept under an idempotency key, with what the
// request was, to refuse the key's reuse for another request.
type stored struct {
	fingerprint string
	status      int
	body        []byte
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, err := url.ParseQuery(string(body))
	if err != nil {
		form = url.Values{}
	}
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil {
		for k, v := range q {
			form[k] = append(form[k], v...)
		}
	}
	req := Request{
		Method: r.Method, Path: r.URL.Path,
		SecretKey:      strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		StripeVersion:  r.Header.Get("Stripe-Version"),
		Form:           form,
		Currency:       form.Get("currency"),
		PaymentMethod:  form.Get("payment_method"),
		Customer:       form.Get("customer"),
		OffSession:     form.Get("off_session") == "true",
		Metadata:       metadata(form),
	}
	req.Amount, _ = strconv.ParseInt(form.Get("amount"), 10, 64)

	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Request-Id", newID("req_"))
	w.Header().Set("Content-Type", "application/json")

	if s.failNext > 0 {
		s.failNext--
		req.Status, req.Injected = s.failStatus, true
		s.requests = append(s.requests, req)
		writeJSON(w, s.failStatus, map[string]any{"error": injected(s.failStatus)})
		return
	}

	status, answer, replay := s.answer(r, req, form)
	req.Status, req.Replay = status, replay
	if s.loseNext > 0 {
		s.loseNext--
		req.Status, req.Lost = 0, true
		s.requests = append(s.requests, req)
		cutAnswer(w, status)
		return
	}
	s.requests = append(s.requests, req)
	if replay {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// answer runs one request, or replays its stored answer, and returns the
// status and body.
func (s *Server) answer(r *http.Request, req Request, form url.Values) (int, []byte, bool) {
	key := req.SecretKey
	if !(strings.HasPrefix(key, "sk_") || strings.HasPrefix(key, "rk_")) || s.revoked[key] {
		shown := key
		if len(shown) > 8 {
			shown = shown[:8] + "****" + shown[len(shown)-4:]
		}
		return errorBody(invalid(http.StatusUnauthorized, "", "", "Invalid API Key provided: "+shown))
	}
	var ik idemKey
	fingerprint := r.Method + " " + r.URL.Path + "?" + form.Encode()
	if req.IdempotencyKey != "" && r.Method == http.MethodPost {
		ik = idemKey{key, req.IdempotencyKey}
		if st, ok := s.idem[ik]; ok {
			if st.fingerprint != fingerprint {
				status, body, _ := errorBody(&apiErr{Type: "idempotency_error", status: http.StatusBadRequest,
					Message: "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '" + req.IdempotencyKey + "' if you meant to execute a different request."})
				return status, body, false
			}
			return st.status, st.body, true
		}
	}
	obj, aerr := s.route(key, r.Method, r.URL.Path, form)
	var status int
	var body []byte
	if aerr != nil {
		status, body, _ = errorBody(aerr)
	} else {
		status, body = http.StatusOK, mustJSON(obj)
	}
	if ik.key != "" && (status == http.StatusOK || status == http.StatusPaymentRequired) {
		s.idem[ik] = &stored{fingerprint: fingerprint, status: status, body: body}
	}
	return status, body, false
}

// cutAnswer starts an answer and closes the connection in its body. A
// connection closed before any answer would not do: net/http resends a
// request carrying an Idempotency-Key on a new connection by itself, and
// the client would never see the failure.
func cutAnswer(w http.ResponseWriter, status int) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("stripefake: the server cannot cut a connection")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	_, _ = fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{", status, http.StatusText(status))
	_ = buf.Flush()
	_ = conn.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	_, _ = w.Write(mustJSON(v))
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// metadata gathers metadata[key] parameters.
func metadata(form url.Values) map[string]string {
	var m map[string]string
	for k, v := range form {
		if name, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(name, "]") {
			if m == nil {
				m = map[string]string{}
			}
			m[strings.TrimSuffix(name, "]")] = v[0]
		}
	}
	return m
}
