/* pf-socket: to be implemented */
