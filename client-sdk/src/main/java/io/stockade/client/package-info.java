/** Leases that know when they are lost, and fencing tokens attached to writes. */
package io.stockade.client;
