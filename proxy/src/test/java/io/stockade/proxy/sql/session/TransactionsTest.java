package io.stockade.proxy.sql.session;

import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** How the listener reads a transaction's end and the token in force from the messages it relayed. */
class TransactionsTest {
    @Test
    void aPreparedTransactionIsNotCommittedAndASessionTokenSetInARolledBackOneDoesNotHold() {
        Transactions t = new Transactions(5L);
        t.mark(1, Transactions.Kind.SESSION, 11L);
        t.completed("BEGIN");
        t.completed("SET");
        assertNull(t.ready('T'));
        t.completed("ROLLBACK");
        assertEquals(new Transactions.Ended("rolled_back", 11L, Map.of()), t.ready('I'));
        t.completed("UPDATE 1");
        assertEquals(new Transactions.Ended("accepted", 5L, Map.of()), t.ready('I'));
        t.mark(4, Transactions.Kind.LOCAL, 6L);
        t.completed("PREPARE TRANSACTION");
        assertEquals(new Transactions.Ended("prepared", 6L, Map.of()), t.ready('I'));
    }

    @Test
    void anErrorAfterTheLastCommandRollsBackAndRecoveringFromOneCommits() {
        Transactions t = new Transactions(7L);
        t.completed("INSERT 0 1");
        t.error(Map.of('C', "23505"));
        assertEquals("rolled_back", t.ready('I').outcome());
        t.completed("BEGIN");
        t.error(Map.of('C', "23505"));
        t.completed("ROLLBACK");
        t.completed("UPDATE 1");
        t.completed("COMMIT");
        assertEquals("accepted", t.ready('I').outcome());
        t.error(Map.of('C', "SF409", 'M', "stale"));
        assertEquals("stale", t.ready('I').outcome());
    }

    @Test
    void aSessionEndingWithAMessageUnansweredLeavesItsOutcomeUnknown() {
        Transactions t = new Transactions(null);
        t.mark(1, Transactions.Kind.LOCAL, 9L);
        assertEquals(new Transactions.Ended("unknown", 9L, Map.of()), t.lost(1));
        Transactions open = new Transactions(3L);
        assertNull(open.ready('T'));
        assertEquals(new Transactions.Ended("rolled_back", 3L, Map.of()), open.lost(1));
        Transactions reset = new Transactions(3L);
        reset.mark(1, Transactions.Kind.RESET_ALL, null);
        reset.completed("RESET");
        assertNull(reset.ready('I'));
        assertNull(reset.lost(1));
    }
}
