// Package makefile holds the tests of the repository's Makefile: that its
// targets ask for what they need and no more, and work. It has no code of
// its own.
package makefile
