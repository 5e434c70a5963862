// Package eventstore is the SQL of processor notifications: each event is
// recorded once in orders.processor_events in the same transaction as its
// effect on the payment, its order and, for an installment's order, its
// schedule.
package eventstore
