// Package driver is the driver's former import path. Importing it still registers the
// "mysqlfailover" database/sql driver; everything it held is now in package
// github.com/mysqlfailover/mysqlfailover (whose name no longer clashes with
// database/sql/driver).
//
// Deprecated: import github.com/mysqlfailover/mysqlfailover instead.
package driver

import _ "github.com/mysqlfailover/mysqlfailover" // registers "mysqlfailover"
