package orders

import "github.com/almoner/almoner/pkg/apperr"

// Domain errors of the orders service.
var (
	errOrderNotFound    = apperr.NotFound("Order")
	errFundNotFound     = apperr.NotFound("Fund")
	errBatchNotFound    = apperr.NotFound("Batch")
	errScheduleNotFound = apperr.NotFound("Recurring donation")
)

// Typed codes of the orders service's business rules (docs/orders.md).
const (
	codeBatchClosed           = "Order.BatchClosed"
	codeBatchNotFound         = "Order.BatchNotFound"
	codeIdempotencyKeyReused  = "Order.IdempotencyKeyReused"
	codeIdempotencyInProgress = "Order.IdempotencyKeyInProgress"
	codePaymentsMismatch      = "Order.PaymentsDoNotMatchTotal"
	codeContactNotFound       = "Order.ContactNotFound"
	codeContactInactive       = "Order.ContactInactive"
	codeFundNotFound          = "Order.FundNotFound"
	codeFundInactive          = "Order.FundInactive"
	codeCurrencyMismatch      = "Order.CurrencyMismatch"
	codeAlreadyVoided         = "Order.AlreadyVoided"
	codeCannotVoid            = "Order.CannotVoid"
	codeCannotRefund          = "Order.CannotRefund"
	codeChangeInProgress      = "Order.ChangeInProgress"
	codeOverRefund            = "Order.RefundExceedsRefundable"
	codeDeclined              = "Payment.DeclinedByProcessor"
	codeProcessorUnavailable  = "Payment.ProcessorNotConfigured"
	codeProcessorRefused      = "Payment.RefusedByProcessor"
	codeMethodNotOwned        = "Payment.MethodOfAnotherContact"
	codeDuplicateFundName     = "Fund.DuplicateName"
	codeNotAmendable          = "RecurringDonation.NotAmendable"
	codeNotPausable           = "RecurringDonation.NotPausable"
	codeNotResumable          = "RecurringDonation.NotResumable"
	codeNotSkippable          = "RecurringDonation.NotSkippable"
	codeChargeInProgress      = "RecurringDonation.ChargeInProgress"
	codeContactMerged         = "Contact.Merged"
	codeImportBatchClosed     = "Import.BatchClosed"
)
