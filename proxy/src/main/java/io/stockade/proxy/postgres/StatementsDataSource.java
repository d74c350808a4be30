package io.stockade.proxy.postgres;

import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.core.BaseConnection;
import org.postgresql.util.HostSpec;

/**
 * The data source a pool opens its connections with, for {@code statements: auto}: pgjdbc's driver over the URL
 * with {@code prepareThreshold=0} (the unnamed statement), and on each new connection one question to the server:
 * which address and port does it see this connection arrive on? Where that is the address and port the driver
 * connected to, nothing stands between the two (a pooler or proxy makes its own connection to the server, from
 * another port at least), and the connection is given pgjdbc's own threshold back: its statements run named,
 * parsed and planned once. Any other answer (another port or address, a Unix socket, no address) keeps the unnamed
 * statement: a transaction pooler hands the server connection, with any named statement on it, to other clients.
 */
final class StatementsDataSource implements DataSource {
    private static final Logger LOG = Logger.getLogger(StatementsDataSource.class.getName());

    private final DataSource driver;
    private final String poolName;
    private final int namedThreshold;
    private final AtomicReference<String> lastDecision = new AtomicReference<>();

    /**
     * @param driver         opens connections that run the unnamed statement
     * @param namedThreshold the threshold a direct connection is given ({@code prepareThreshold} of the URL, else
     *                       pgjdbc's default)
     */
    StatementsDataSource(DataSource driver, String poolName, int namedThreshold) {
        this.driver = driver;
        this.poolName = poolName;
        this.namedThreshold = namedThreshold;
    }

    @Override
    public Connection getConnection() throws SQLException {
        return decided(driver.getConnection());
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        return decided(driver.getConnection(username, password));
    }

    private Connection decided(Connection c) throws SQLException {
        try {
            String direct = directlyAt(c);
            c.unwrap(PGConnection.class).setPrepareThreshold(direct == null ? 0 : namedThreshold);
            String decision = direct == null
                    ? "the server sees its connections arrive elsewhere than where they were opened (a pooler or"
                            + " proxy in between, or a Unix socket): the unnamed statement on each"
                    : "connections reach PostgreSQL directly at " + direct + ": named server-side statements";
            if (!decision.equals(lastDecision.getAndSet(decision))) {
                LOG.info(() -> "pool " + poolName + " (statements: auto): " + decision);
            }
            return c;
        } catch (SQLException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /**
     * The server's address and port as {@code host:port} when the server reports the very address and port the
     * driver connected to, else {@code null}.
     */
    static @Nullable String directlyAt(Connection c) throws SQLException {
        HostSpec target = c.unwrap(BaseConnection.class).getQueryExecutor().getHostSpec();
        String address;
        int port;
        try (Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT host(inet_server_addr()), inet_server_port()")) {
            r.next();
            address = r.getString(1);
            port = r.getInt(2);
            if (address == null || r.wasNull() || port != target.getPort()) {
                return null;
            }
        }
        try {
            InetAddress server = InetAddress.getByName(address); // a literal: no lookup
            for (InetAddress a : InetAddress.getAllByName(target.getHost())) {
                if (a.equals(server)) {
                    return address + ":" + port;
                }
            }
            return null;
        } catch (UnknownHostException e) {
            return null;
        }
    }

    @Override
    public PrintWriter getLogWriter() throws SQLException {
        return driver.getLogWriter();
    }

    @Override
    public void setLogWriter(PrintWriter out) throws SQLException {
        driver.setLogWriter(out);
    }

    @Override
    public void setLoginTimeout(int seconds) throws SQLException {
        driver.setLoginTimeout(seconds);
    }

    @Override
    public int getLoginTimeout() throws SQLException {
        return driver.getLoginTimeout();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        return driver.getParentLogger();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
        if (iface.isInstance(this)) {
            return iface.cast(this);
        }
        return driver.unwrap(iface);
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) throws SQLException {
        return iface.isInstance(this) || driver.isWrapperFor(iface);
    }
}
