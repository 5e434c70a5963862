package wire

import "github.com/almoner/almoner/pkg/apperr"

// Not-found answers of the orders service.
var (
	ErrOrderNotFound    = apperr.NotFound("Order")
	ErrFundNotFound     = apperr.NotFound("Fund")
	ErrBatchNotFound    = apperr.NotFound("Batch")
	ErrScheduleNotFound = apperr.NotFound("Recurring donation")
)

// Typed codes of the orders service's business rules (docs/orders.md).
const (
	CodeBatchClosed           = "Order.BatchClosed"
	CodeBatchNotFound         = "Order.BatchNotFound"
	CodeIdempotencyKeyReused  = "Order.IdempotencyKeyReused"
	CodeIdempotencyInProgress = "Order.IdempotencyKeyInProgress"
	CodePaymentsMismatch      = "Order.PaymentsDoNotMatchTotal"
	CodeContactNotFound       = "Order.ContactNotFound"
	CodeContactInactive       = "Order.ContactInactive"
	CodeFundNotFound          = "Order.FundNotFound"
	CodeFundInactive          = "Order.FundInactive"
	CodeCurrencyMismatch      = "Order.CurrencyMismatch"
	CodeAlreadyVoided         = "Order.AlreadyVoided"
	CodeCannotVoid            = "Order.CannotVoid"
	CodeCannotRefund          = "Order.CannotRefund"
	CodeChangeInProgress      = "Order.ChangeInProgress"
	CodeOverRefund            = "Order.RefundExceedsRefundable"
	CodeDeclined              = "Payment.DeclinedByProcessor"
	CodeProcessorUnavailable  = "Payment.ProcessorNotConfigured"
	CodeProcessorRefused      = "Payment.RefusedByProcessor"
	CodeMethodNotOwned        = "Payment.MethodOfAnotherContact"
	CodeDuplicateFundName     = "Fund.DuplicateName"
	CodeNotAmendable          = "RecurringDonation.NotAmendable"
	CodeNotPausable           = "RecurringDonation.NotPausable"
	CodeNotResumable          = "RecurringDonation.NotResumable"
	CodeNotSkippable          = "RecurringDonation.NotSkippable"
	CodeChargeInProgress      = "RecurringDonation.ChargeInProgress"
	CodeContactMerged         = "Contact.Merged"
	CodeImportBatchClosed     = "Import.BatchClosed"
)
