package conn

import "context"

// intentKey is the context key of a read intent (WithReadIntent).
type intentKey struct{}

// WithReadIntent returns ctx with a read intent and routingKey ("" for none): see
// mysqlfailover.WithReadIntent.
func WithReadIntent(ctx context.Context, routingKey string) context.Context {
	return context.WithValue(ctx, intentKey{}, routingKey)
}

// readIntent returns the routing key of ctx's read intent and whether it has one.
func readIntent(ctx context.Context) (key string, ok bool) {
	key, ok = ctx.Value(intentKey{}).(string)
	return key, ok
}
