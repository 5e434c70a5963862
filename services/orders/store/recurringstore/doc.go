// Package recurringstore is the SQL of recurring donation schedules: their
// lists and lifecycle changes under the row lock, the installment runner's
// claims (orders.recurring_charges, committed with a lease before the
// processor is called) and the outcomes recorded after, retry settings and
// the installments' history. What a schedule becomes is decided by the
// pure rules of package schedule; this package reads, locks and writes.
package recurringstore
