package webhooks

import (
	"context"
	"crypto/x509"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/webhooks/store"
)

// TestSendRefusesANameThatNowAnswersInternal: an endpoint registered under
// a name that answered a public address, whose name answers 127.0.0.1 by
// the time of sending (DNS rebinding, or a record changed since), is not
// reached: not by the dispatcher's delivery, nor by a redelivery. The
// check is the dialer's Control, on the address actually dialled; the
// receiver listens on 127.0.0.1 with a certificate for example.com, so
// without that check the POST would arrive.
func TestSendRefusesANameThatNowAnswersInternal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	var answer atomic.Value
	answer.Store(netip.MustParseAddr("93.184.215.14"))
	// The production policy (no private targets), answering from answer.
	h.s.policy = urlPolicy{lookup: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{answer.Load().(netip.Addr)}, nil
	}}
	roots := x509.NewCertPool()
	roots.AddCert(h.rc.Certificate())
	h.s.sender = newSender(h.s.policy, h.s.cfg.Timeout, roots, 4)

	rc, err := url.Parse(h.rc.URL)
	if err != nil {
		t.Fatal(err)
	}
	target := "https://example.com:" + rc.Port() + "/hook"
	if why := h.s.policy.validateURL(context.Background(), target); why != "" {
		t.Fatalf("registration refused %s: %s", target, why)
	}
	ep := h.endpointAt(t, target, "contact.created")
	answer.Store(netip.MustParseAddr("127.0.0.1"))

	h.write(t, "c", 1)
	h.d.enqueue(context.Background())
	h.d.dispatch(context.Background())
	h.settle(t, 1)
	var delivery uuid.UUID
	if err := h.pool.QueryRow(context.Background(), `SELECT id FROM webhooks.deliveries WHERE endpoint_id = $1`, ep).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.store.Redeliver(context.Background(), h.tenant, delivery, 0); err != nil {
		t.Fatal(err)
	}
	h.d.dispatch(context.Background())
	if got := h.settle(t, 2); len(got) != 0 {
		t.Fatalf("the receiver on 127.0.0.1 got %d requests", len(got))
	}
	rows, err := h.pool.Query(context.Background(), `SELECT error FROM webhooks.attempts WHERE endpoint_id = $1`, ep)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var reason string
		if err := rows.Scan(&reason); err != nil {
			t.Fatal(err)
		}
		if reason != "connection refused: the address is internal and not allowed" {
			t.Errorf("attempt error %q", reason)
		}
	}
}

// endpointAt registers a live endpoint of the harness's tenant at url.
func (h *harness) endpointAt(t *testing.T, url string, types ...string) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	_, err := h.s.store.CreateEndpoint(context.Background(), store.Endpoint{
		TenantID: h.tenant, ID: id, Name: "hook", URL: url, EventTypes: types,
		SecretBox: h.s.sealer.Seal([]byte(newSecret()), id[:]),
	}, "system")
	if err != nil {
		t.Fatal(err)
	}
	return id
}
