package recurring

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	"github.com/almoner/almoner/services/orders/peers"
	"github.com/almoner/almoner/services/orders/store"
	"github.com/almoner/almoner/services/orders/store/recurringstore"
	"github.com/almoner/almoner/services/orders/tenantproc"
)

// Service is the recurring room: schedules, their lifecycle and settings,
// and the runner that charges their installments.
type Service struct {
	store      *recurringstore.Store
	processors tenantproc.Source
	now        func() time.Time
	lease      time.Duration
	logger     *slog.Logger
	// settings is where the tenant's retry days live (the auth service);
	// nil leaves the store's copy as it is (tests of this module).
	settings peers.Settings
}

// New returns the recurring room on st: installments are charged through
// processors, on now's day, each claimed for lease (DefaultChargeLease
// when 0).
func New(st *store.Store, processors tenantproc.Source, now func() time.Time, lease time.Duration, logger *slog.Logger) *Service {
	if lease <= 0 {
		lease = DefaultChargeLease
	}
	return &Service{store: recurringstore.New(st), processors: processors, now: now, lease: lease, logger: logger}
}

// UseSettings makes the auth service's tenant settings the source of the
// retry days: the admin command writes through to them, and the runner
// copies them before it records a decline.
func (s *Service) UseSettings(settings peers.Settings) { s.settings = settings }

// syncRetryDays copies the tenant's retry days from the auth service into
// orders.recurring_settings, outside any transaction, so the decline about
// to be recorded (in a transaction, which may make no call) counts them.
// When auth cannot be reached the copy last read counts, and the log says
// so: a decline is better recorded on yesterday's days than not at all.
func (s *Service) syncRetryDays(ctx context.Context, tenantID uuid.UUID) {
	peers.SyncRetryDays(ctx, s.settings, s.store.SetRetryDays, tenantID, s.logger)
}

// ScheduleServer returns the schedules' gRPC server.
func (s *Service) ScheduleServer() *ScheduleServer { return &ScheduleServer{s: s} }

// SettingsServer returns the operators' recurring settings server.
func (s *Service) SettingsServer() ordersv1.RecurringSettingsServiceServer {
	return &settingsServer{s: s}
}
