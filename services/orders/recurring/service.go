package recurring

import (
	"log/slog"
	"time"

	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
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

// ScheduleServer returns the schedules' gRPC server.
func (s *Service) ScheduleServer() *ScheduleServer { return &ScheduleServer{s: s} }

// SettingsServer returns the operators' recurring settings server.
func (s *Service) SettingsServer() ordersv1.RecurringSettingsServiceServer {
	return &settingsServer{s: s}
}
