// Package changestore is the SQL of changes to recorded orders: refunds
// and voids are claimed in orders.payment_changes (with a lease, committed
// before the processor is called), recorded in a second transaction, and
// finished by the sweeper when their process died. The refund plan is the
// changes room's pure function, handed in as a PlanFunc.
package changestore
