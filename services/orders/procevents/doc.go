// Package procevents applies what a payment processor tells the orders
// service after the fact: a bank debit settled or returned, a charge
// refunded in the processor's dashboard, a dispute. Each signed event is
// applied exactly once (store.ApplyNotification).
package procevents
