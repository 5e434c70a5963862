// Command webhook-receiver is an example receiver of Almoner webhooks: it
// checks each request's signature in constant time (webhook.Verify), rejects
// a timestamp more than five minutes from its own clock, and skips delivery
// ids it has already processed, answering 2xx quickly as the contract asks.
//
//	ALMONER_WEBHOOK_SECRET=whsec_... go run ./docs/examples/webhook-receiver
//
// It listens on ADDR (:8443 by default) with TLS when CERT_FILE and KEY_FILE are set, else on
// plain HTTP behind a TLS-terminating proxy. The same handler, in a form the
// test suite runs, is pkg/webhook's ExampleVerify.
package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/almoner/almoner/pkg/webhook"
)

// Tolerance is how far the request's timestamp may be from this clock.
const Tolerance = 5 * time.Minute

// receiver remembers processed delivery ids; a real one keeps them in its
// database, in the transaction that applies the event's side effects.
type receiver struct {
	secret string
	mu     sync.Mutex
	seen   map[string]bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The signature covers the raw bytes: read them before any decoding.
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	if err := webhook.Verify(rc.secret, r.Header.Get(webhook.HeaderSignature), r.Header.Get(webhook.HeaderTimestamp), body, Tolerance); err != nil {
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(webhook.HeaderDeliveryID)
	rc.mu.Lock()
	dup := rc.seen[id]
	rc.seen[id] = true
	rc.mu.Unlock()
	if dup {
		w.WriteHeader(http.StatusOK) // already processed: acknowledge only
		return
	}
	var ev struct {
		ID    string `json:"id"`
		Event string `json:"event"`
		Data  struct {
			EntityType string `json:"entity_type"`
			EntityID   string `json:"entity_id"`
			Action     string `json:"action"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	// Retries of one event carry new delivery ids but the same event id:
	// receivers that must act once per event also deduplicate on ev.ID.
	log.Printf("event %s %s: %s %s", ev.ID, ev.Event, ev.Data.EntityType, ev.Data.EntityID)
	w.WriteHeader(http.StatusNoContent)
}

func main() {
	secret := os.Getenv("ALMONER_WEBHOOK_SECRET")
	if secret == "" {
		log.Fatal("set ALMONER_WEBHOOK_SECRET to the endpoint's whsec_ secret")
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = ":8443"
	}
	srv := &http.Server{Addr: addr, Handler: &receiver{secret: secret, seen: map[string]bool{}}, ReadHeaderTimeout: 5 * time.Second}
	var err error
	if cert, key := os.Getenv("CERT_FILE"), os.Getenv("KEY_FILE"); cert != "" && key != "" {
		log.Printf("listening on %s (HTTPS)", srv.Addr)
		err = srv.ListenAndServeTLS(cert, key)
	} else {
		log.Printf("listening on %s (HTTP)", srv.Addr)
		err = srv.ListenAndServe()
	}
	log.Fatal(err)
}
