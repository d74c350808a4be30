package io.stockade.proxy;

public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
    }
}
