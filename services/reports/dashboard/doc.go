// Package dashboard is the reports service's fundraising dashboard
// (issue 34, docs/dashboard.md): a period's giving against the same period
// a year earlier, for a tenant or for the contacts assigned to one staff
// user (a portfolio). It reads the orders and contacts services' data only
// through the report_*_v1 views they publish, and auth's memberships
// through its MembershipService.
package dashboard
