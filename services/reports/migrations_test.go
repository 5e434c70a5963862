package reports

import (
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
	contactsmig "github.com/almoner/almoner/services/contacts/migrations"
	inventorymig "github.com/almoner/almoner/services/inventory/migrations"
	ordersmig "github.com/almoner/almoner/services/orders/migrations"
	"github.com/almoner/almoner/services/reports/migrations"
)

// testMigrations are the schemas the tests run reports on: the sets that
// publish the views it reads, then its own. In a deployment their owners
// apply those sets (Migrations lists only what reports migrates); the
// tests, which start no owner, apply them here.
func testMigrations() []db.Migrations {
	return []db.Migrations{audit.Migrations(), mail.Migrations(), contactsmig.Set(), inventorymig.Set(), ordersmig.Set(), migrations.Set()}
}
