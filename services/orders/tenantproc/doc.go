// Package tenantproc finds each tenant's payment processor account (its
// Stripe account read from the auth service, or the sandbox's test
// processor) and guards every call to it: none may run inside a database
// transaction (db.OutsideTx).
package tenantproc
