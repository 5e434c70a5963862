// Package refund holds what a refund does to a payment and to its order,
// as pure functions: the changes store records a refund with what they
// return, and they are tested by table without a database. (The refund's
// plan, which payments give how much, is the changes room's planRefund.)
package refund

import "github.com/almoner/almoner/services/orders/store"

// Payment is p once amount more of it is refunded: partly or fully
// refunded. A disputed payment stays disputed: a dispute outranks the
// refund in the status, and the refunded amount still shows it.
func Payment(p store.Payment, amount int64) store.Payment {
	np := p
	np.RefundedMinor += amount
	np.Status = store.PaymentPartiallyRefunded
	if np.RefundedMinor == np.AmountMinor {
		np.Status = store.PaymentRefunded
	}
	if p.Status == store.PaymentDisputed {
		np.Status = store.PaymentDisputed
	}
	return np
}

// OrderStatus is the status of o once total more of it is refunded.
func OrderStatus(o store.Order, total int64) string {
	if o.RefundedMinor+total == o.TotalMinor {
		return store.StatusRefunded
	}
	return store.StatusPartiallyRefunded
}
