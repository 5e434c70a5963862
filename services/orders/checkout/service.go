package checkout

import (
	"log/slog"
	"time"

	"github.com/almoner/almoner/services/orders/fulfillment"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// Service is the checkout room: it records orders made through the API.
type Service struct {
	store            *store.Store
	processors       tenantproc.Source
	contacts         peers.Contacts
	stock            peers.Stock
	outbox           *fulfillment.Outbox
	now              func() time.Time
	idempotencyLease time.Duration
	logger           *slog.Logger
}

// Deps are what checkout needs: the store, the tenants' processors, the
// contacts and inventory services, the shipments' outbox, the clock, how long a keyed request
// holds its key before a retry may take it over, and the logger.
type Deps struct {
	Store            *store.Store
	Processors       tenantproc.Source
	Contacts         peers.Contacts
	Stock            peers.Stock
	Outbox           *fulfillment.Outbox
	Now              func() time.Time
	IdempotencyLease time.Duration
	Logger           *slog.Logger
}

// New returns the checkout room.
func New(d Deps) *Service {
	return &Service{store: d.Store, processors: d.Processors, contacts: d.Contacts, stock: d.Stock, outbox: d.Outbox, now: d.Now,
		idempotencyLease: d.IdempotencyLease, logger: d.Logger}
}
