"""A live stream on screen: its connection's words and the follower of its proxy runs."""
