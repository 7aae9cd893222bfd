package layer

// quotaCodes are the provider error codes that mean an exhausted account
// quota or spend limit rather than a rate limit: OpenAI's
// insufficient_quota and the spend- and usage-limit codes that replace it.
var quotaCodes = []string{
	"insufficient_quota",
	"credit_balance_exhausted",
	"organization_spend_limit_exceeded",
	"project_spend_limit_exceeded",
	"organization_usage_limit_exceeded",
}

// IsQuotaExhaustedCode reports whether code, a provider error code exactly
// as sent, says that the account's quota or spend limit is exhausted:
// "insufficient_quota", "credit_balance_exhausted",
// "organization_spend_limit_exceeded", "project_spend_limit_exceeded" or
// "organization_usage_limit_exceeded".
func IsQuotaExhaustedCode(code string) bool {
	for _, c := range quotaCodes {
		if code == c {
			return true
		}
	}
	return false
}
