// PeerJ is the MariaDB Connector/J side of cmd/benchpeers: the Go program compiles it with
// javac at run time and drives it over stdin, one command a line, reading its answers from
// stdout. Times are microseconds since the Unix epoch, so that the Go side can put them on
// its own timeline (same machine, same clock).
//
//   lat URL KIND MILLIS           one connection; KIND select1 ("SELECT 1") or point (a
//                                 PreparedStatement "SELECT v FROM bench WHERE id = ?"
//                                 made and closed per call); 1.5 s of warm-up for the JIT
//                                 the first time a KIND runs (0.1 s later), then MILLIS of
//                                 calls: "lat NS_PER_OP CALLS"
//   start URL WORKERS PACE_MS     one Connection per worker thread, opened before answering
//                                 "started"; each runs SELECT @@port, then sleeps PACE_MS,
//                                 and prints "op WORKER START END PORT ERROR" per call
//                                 (PORT 0 and ERROR "-" as fits). A Connection found
//                                 closed is opened again in the next call (that counts).
//   stop                          ends the workers, closes their connections: "stopped"
//   quit
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

public class PeerJ {
    private static final PrintStream OUT =
        new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false);

    private static synchronized void emit(String s) {
        OUT.println(s);
    }

    private static synchronized void flush() {
        OUT.flush();
    }

    private static long micros() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
    }

    private static String kind(Throwable e) {
        String k = e.getClass().getSimpleName();
        if (e instanceof SQLException && ((SQLException) e).getSQLState() != null) {
            k += "/" + ((SQLException) e).getSQLState();
        }
        return k.replace(' ', '_');
    }

    public static void main(String[] args) throws Exception {
        Thread flusher = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
                flush();
            }
        });
        flusher.setDaemon(true);
        flusher.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        List<Thread> threads = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            try {
                switch (f[0]) {
                    case "lat":
                        lat(f[1], f[2], Long.parseLong(f[3]));
                        break;
                    case "start":
                        stop.set(false);
                        threads = start(f[1], Integer.parseInt(f[2]), Long.parseLong(f[3]), stop);
                        emit("started");
                        break;
                    case "stop":
                        stop.set(true);
                        for (Thread t : threads) {
                            t.join();
                        }
                        threads.clear();
                        emit("stopped");
                        break;
                    case "quit":
                        flush();
                        return;
                    default:
                        emit("error unknown command " + f[0]);
                }
            } catch (Exception e) {
                emit("error " + kind(e) + " " + String.valueOf(e.getMessage()).replace('\n', ' '));
            }
            flush();
        }
    }

    private static final java.util.Set<String> WARMED = new java.util.HashSet<>();

    private static void lat(String url, String kind, long millis) throws Exception {
        try (Connection c = DriverManager.getConnection(url)) {
            call(c, kind, 1);
            long warm = WARMED.add(kind) ? 1_500_000_000L : 100_000_000L;
            long end = System.nanoTime() + warm;
            for (int i = 0; System.nanoTime() < end; i++) {
                call(c, kind, i);
            }
            long n = 0;
            long begin = System.nanoTime();
            end = begin + millis * 1_000_000L;
            long now;
            do {
                call(c, kind, (int) n);
                n++;
                now = System.nanoTime();
            } while (now < end);
            emit("lat " + ((now - begin) / n) + " " + n);
        }
    }

    private static void call(Connection c, String kind, int i) throws SQLException {
        if (kind.equals("point")) {
            try (PreparedStatement ps = c.prepareStatement("SELECT v FROM bench WHERE id = ?")) {
                ps.setInt(1, i % 1000 + 1);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                }
            }
            return;
        }
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
            rs.next();
        }
    }

    private static List<Thread> start(String url, int workers, long pace, AtomicBoolean stop) throws SQLException {
        Connection[] conns = new Connection[workers];
        try {
            for (int w = 0; w < workers; w++) {
                conns[w] = DriverManager.getConnection(url);
            }
        } catch (SQLException e) {
            for (Connection c : conns) {
                if (c != null) {
                    c.close();
                }
            }
            throw e;
        }
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            final int id = w;
            Thread t = new Thread(() -> work(url, id, conns[id], pace, stop));
            t.start();
            threads.add(t);
        }
        return threads;
    }

    private static void work(String url, int w, Connection c, long pace, AtomicBoolean stop) {
        while (!stop.get()) {
            long begin = micros();
            int port = 0;
            String err = "-";
            try {
                if (c == null || c.isClosed()) {
                    c = DriverManager.getConnection(url);
                }
                try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT @@port")) {
                    rs.next();
                    port = rs.getInt(1);
                }
            } catch (SQLException e) {
                err = kind(e);
            }
            emit("op " + w + " " + begin + " " + micros() + " " + port + " " + err);
            try {
                Thread.sleep(pace);
            } catch (InterruptedException e) {
                return;
            }
        }
        if (c != null) {
            try {
                c.close();
            } catch (SQLException e) {
                // closing a connection to a dead host: nothing to do
            }
        }
    }
}
