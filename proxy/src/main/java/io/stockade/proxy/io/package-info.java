/**
 * Stream plumbing shared by the listener, the upstream client and the backends; depends on nothing of Stockade's.
 */
package io.stockade.proxy.io;
