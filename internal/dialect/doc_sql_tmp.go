// Package dialect is what MySQL and MariaDB servers say and mean (temporary comment: the
// merger deletes this file for the package's doc.go).
package dialect
