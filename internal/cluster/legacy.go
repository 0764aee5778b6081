package cluster

// Names kept for code outside this package's area while issue 10 lands: each is
// Deprecated and goes once its last user has moved.

// RetryPause is the old name of DefaultPassPause.
//
// Deprecated: use DefaultPassPause. Kept for integration/all_down_test.go.
const RetryPause = DefaultPassPause

// BackoffMax is the old name of DefaultBackoffMax.
//
// Deprecated: use DefaultBackoffMax. Kept for integration/controlled_test.go.
const BackoffMax = DefaultBackoffMax
