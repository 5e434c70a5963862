// Package reporttypes names the built-in report types. The reports service
// defines what each one computes (services/reports.Catalog, whose keys are
// these constants); the names live here, in pkg, so that the OpenAPI
// generator can list them as the closed set a typeKey takes without
// importing a service.
package reporttypes

// The report type keys, as paths and saved definitions name them.
const (
	DonationsByPeriod   = "donations-by-period"
	DonationsByFund     = "donations-by-fund"
	DonationsByCampaign = "donations-by-campaign"
	TopDonors           = "top-donors"
	Lybunt              = "lybunt"
	Sybunt              = "sybunt"
	DonorRetention      = "donor-retention"
	NewDonors           = "new-donors"
	RecurringRevenue    = "recurring-revenue"
	UpcomingRecurring   = "upcoming-recurring"
	RefundsAndVoids     = "refunds-and-voids"
	ItemSales           = "item-sales"
	InventoryStock      = "inventory-stock"
	GivingStatement     = "giving-statement"
)

// Keys lists every key, in the order GET /reports/types lists the types.
// A test in services/reports holds its catalog to exactly this list.
func Keys() []string {
	return []string{
		DonationsByPeriod, DonationsByFund, DonationsByCampaign, TopDonors,
		Lybunt, Sybunt, DonorRetention, NewDonors, RecurringRevenue,
		UpcomingRecurring, RefundsAndVoids, ItemSales, InventoryStock,
		GivingStatement,
	}
}
